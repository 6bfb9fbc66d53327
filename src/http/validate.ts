/**
 * Input validation for handlers (CONTRIBUTING.md rule 3: a route parses its input into a typed value with
 * zod, calls one core function and shapes the response). A failure is a 400 `VALIDATION_FAILED`
 * naming the first offending field, e.g. `note: Too big: expected string to have <=1024 characters`.
 */
import type { z } from 'zod';
import { AppError } from '../errors/index.ts';

/** Validate the parsed JSON body (`ctx.state.body`). */
export function parseBody<S extends z.ZodType>(ctx: { state: { body: unknown } }, schema: S): z.output<S> {
  return parseInput(ctx.state.body, schema);
}

/** Validate the query string (values are strings, or arrays for repeated keys). */
export function parseQuery<S extends z.ZodType>(ctx: { query: unknown }, schema: S): z.output<S> {
  return parseInput(ctx.query, schema);
}

/** Validate route parameters (`/probe/:key` → `{ key }`). */
export function parseParams<S extends z.ZodType>(ctx: { params: Record<string, string> }, schema: S): z.output<S> {
  return parseInput(ctx.params, schema);
}

/** Validate any input value, throwing `AppError('VALIDATION_FAILED', "<field>: <message>")`. */
export function parseInput<S extends z.ZodType>(value: unknown, schema: S): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new AppError('VALIDATION_FAILED', describeIssue(result.error.issues[0]));
}

function describeIssue(issue: z.core.$ZodIssue | undefined): string {
  if (issue === undefined) return 'Invalid input';
  const field = issue.path.map(String).join('.');
  return field === '' ? issue.message : `${field}: ${issue.message}`;
}
