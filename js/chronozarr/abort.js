// Abort plumbing shared by every read (spec 10: a scrub cancels the frames it no longer needs).
// An aborted read rejects with the signal's reason, like fetch does.

/** The rejection value of an aborted signal: its reason, else a DOMException named AbortError. */
export function abortError(signal) {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/**
 * Reject as soon as `signal` aborts, otherwise settle with `promise`. `onAbort` runs once on
 * abort, `onSettle` once when `promise` settles first.
 */
export function raceSignal(promise, signal, onAbort, onSettle) {
  if (!signal) return promise.finally(onSettle);
  if (signal.aborted) {
    onAbort?.();
    return Promise.reject(abortError(signal));
  }
  return new Promise((resolve, reject) => {
    let done = false;
    const abort = () => {
      if (done) return;
      done = true;
      onAbort?.();
      reject(abortError(signal));
    };
    signal.addEventListener("abort", abort, { once: true });
    const settle = (fn) => (v) => {
      if (done) return;
      done = true;
      signal.removeEventListener("abort", abort);
      onSettle?.();
      fn(v);
    };
    promise.then(settle(resolve), settle(reject));
  });
}
