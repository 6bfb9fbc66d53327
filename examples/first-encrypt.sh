#!/bin/sh
# A first encrypt and decrypt with the quorumkeep CLI (docs/client.md), against a local cluster:
# start one in another terminal with `quorumkeep local` (or `npm start` in a checkout), then run
#
#   sh examples/first-encrypt.sh
#
# The code mail is read from the local cluster's outboxes (QK_OUTBOX, default ./data: where
# `quorumkeep local` keeps its cluster). QK_URL names another coordinator; the session is kept in
# ~/.config/quorumkeep/session.json (or QK_SESSION_FILE). The test suite runs this script
# (test/e2e/examples.test.ts), so it is known to work.
set -eu

EMAIL="${EMAIL:-first-$(date +%s)@example.org}"
# The password comes from QK_PASSWORD here so the script runs unattended; without it (and without
# --password-stdin) register and login ask for it on the terminal.
export QK_PASSWORD="${QK_PASSWORD:-correct horse battery staple}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

quorumkeep register --email "$EMAIL"
quorumkeep verify --email "$EMAIL" --outbox "${QK_OUTBOX:-./data}"
quorumkeep login --email "$EMAIL"

SECRET="$(quorumkeep secret create)"
echo "secret: $SECRET"

# Text: the encrypted payload is one JSON line; decrypt prints the text back.
printf 'hello, quorumkeep' | quorumkeep encrypt --secret "$SECRET" > "$WORK/message.json"
echo "decrypted: $(quorumkeep decrypt --in "$WORK/message.json")"

# A file: encrypted into a .cifer archive, then decrypted back (progress on stderr).
printf 'a file of notes\n' > "$WORK/notes.txt"
quorumkeep encrypt-file "$WORK/notes.txt" --secret "$SECRET"
quorumkeep decrypt-file "$WORK/notes.txt.cifer" --out "$WORK/notes.out.txt"
cmp "$WORK/notes.txt" "$WORK/notes.out.txt" && echo "file round trip: identical"
