/** Small HTTP helpers for tests against real coordinators. */

/** A parsed JSON response. */
export interface JsonResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** GET a JSON endpoint. */
export async function getJson<T = Record<string, unknown>>(url: string, headers: Record<string, string> = {}): Promise<JsonResponse<T>> {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

/** POST a JSON body. */
export async function postJson<T = Record<string, unknown>>(url: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse<T>> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}
