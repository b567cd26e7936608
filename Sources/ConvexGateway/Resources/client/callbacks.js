/** Calling the page's callbacks. Part of client.js (see gateway.js). */

/** Calls a listener; one that throws is reported without disturbing the others. */
export function notify(callback, ...values) {
  try {
    callback(...values);
  } catch (error) {
    (globalThis.reportError ?? console.error)(error);
  }
}
