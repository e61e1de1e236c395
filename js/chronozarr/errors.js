// Typed errors of the chronozarr JavaScript reader.
//
// Every message says what was wrong and where (URL, key or attribute) so that a user can act on
// it; the classes mirror the Python library's chronozarr.errors so both readers fail alike.

/** Base class of every error the reader raises (aborts keep the signal's own reason). */
export class ChronozarrError extends Error {
  /**
   * @param {string} [message]
   * @param {ErrorOptions} [options]
   */
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** No root zarr.json at the URL (HTTP 404, or the host could not be reached). */
export class StoreNotFoundError extends ChronozarrError {}

/** The root is not a chronozarr store (not JSON, not a group, or no chronozarr attributes). */
export class NotAChronozarrStoreError extends ChronozarrError {}

/** The store uses a spec_version, encoding, data_type or codec this reader does not support. */
export class UnsupportedError extends ChronozarrError {}

/** Metadata or an object of the store is malformed (bad JSON, bad index checksum, short read). */
export class CorruptStoreError extends ChronozarrError {}

/** An HTTP request failed: a status other than 2xx/404, a network error or a timeout. */
export class FetchError extends ChronozarrError {
  /**
   * @param {string} message
   * @param {{url?: string, status?: number | null, cause?: unknown}} [options]
   */
  constructor(message, { url, status = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    /** The URL requested. @type {string | undefined} */
    this.url = url;
    /** The HTTP status, or null for a network error or a timeout. @type {number | null} */
    this.status = status;
  }
}
