// The console's JSON API: same origin, the session cookie, and the CSRF token on every POST.

let csrf = '';

export function setCsrf(token) { csrf = token; }

export class ApiError extends Error {
  constructor(status, message, body) { super(message); this.status = status; this.body = body; }
}

async function answer(r) {
  const body = await r.json().catch(() => ({}));
  if (r.status === 401) {
    // The session ended: the page at / asks for the token again.
    location.assign('/');
  }
  if (!r.ok) throw new ApiError(r.status, body.error || `${r.status} ${r.statusText}`, body);
  return body;
}

export async function get(path) {
  return answer(await fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' } }));
}

export async function post(path, data) {
  return answer(await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'X-CSRF-Token': csrf },
    body: JSON.stringify(data ?? {}),
  }));
}
