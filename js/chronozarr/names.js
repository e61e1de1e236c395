// Names a store's metadata gives to its nodes, checked before they become URL paths (decision 0016).
//
// The chronozarr block names the data variable, the mask, coverage and volatility arrays and the
// level groups (spec 3.2, 3.7; multiscales datasets, 3.3). The reader joins them to the store's
// base URL, so a name is a relative node path and nothing else: one or more segments separated by
// "/", each of letters, digits, "_", "-" and ".", never "." or "..", at most 1,024 characters in
// all (255 per segment). That refuses absolute paths, "..", URL schemes and drive letters (":"),
// percent-escapes a URL parser or host decodes into ".." ("%2e%2e"), query and fragment
// characters, backslashes (WHATWG URLs read "\" as "/"), control characters and NUL. It is the
// same rule as the Python library's chronozarr/names.py, so both readers refuse the same stores.

import { CorruptStoreError } from "./errors.js";

const SEGMENT = /^[A-Za-z0-9_.-]{1,255}$/;
export const MAX_NAME_LENGTH = 1024;

/** Why `name` is not a safe node path of a store, or null when it is. */
export function nameProblem(name) {
  if (typeof name !== "string") return `expected a string, got ${name === null ? "null" : Array.isArray(name) ? "array" : typeof name}`;
  if (!name) return "empty";
  if (name.length > MAX_NAME_LENGTH) return `${name.length} characters (at most ${MAX_NAME_LENGTH})`;
  for (const segment of name.split("/")) {
    if (segment === "" || segment === "." || segment === "..") {
      return "an empty, '.' or '..' path segment (names stay inside the store)";
    }
    if (!SEGMENT.test(segment)) {
      return "characters other than letters, digits, '_', '-' and '.' (no scheme, absolute path, escape or control character)";
    }
  }
  return null;
}

/** A short, printable rendering of a hostile value for a message (no control characters). */
export function shown(value) {
  let text;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** `name` when it is a safe node path; CorruptStoreError naming `what` (the key) otherwise. */
export function checkName(name, what) {
  const problem = nameProblem(name);
  if (problem !== null) throw new CorruptStoreError(`${what}: ${shown(name)} is not a safe store name: ${problem}`);
  return name;
}

/** True when `text` holds a C0 control character or DEL. */
function hasControl(text) {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/**
 * Join an object key to the store's base URL so that the result cannot leave the store: the key
 * is resolved as a URL (as fetch would), and the resolved URL must still start with `base` (an
 * absolute "http(s)://..." base ending in "/"). CorruptStoreError naming the key otherwise.
 */
export function joinUrl(base, key, query = "") {
  if (typeof key !== "string" || key === "" || key.startsWith("/") || /[\\?#]/.test(key) || hasControl(key)) {
    throw new CorruptStoreError(`${base}: object key ${shown(key)} would leave the store`);
  }
  let resolved;
  try {
    resolved = new URL(key, base).href;
  } catch {
    throw new CorruptStoreError(`${base}: object key ${shown(key)} is not a URL path`);
  }
  // WHATWG URL parsing removes "." and ".." (also "%2e%2e") segments: compare after it.
  if (!resolved.startsWith(base) || resolved.length === base.length) {
    throw new CorruptStoreError(`${base}: object key ${shown(key)} resolves to ${shown(resolved)}, outside the store`);
  }
  if (resolved !== base + key) {
    throw new CorruptStoreError(`${base}: object key ${shown(key)} is not a plain path inside the store (resolves to ${shown(resolved)})`);
  }
  return resolved + query;
}
