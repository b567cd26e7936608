/** The client's one error type. Part of client.js (see gateway.js). */

/**
 * A failure: `code`, `message`, `data` when a function threw a ConvexError, and `status`, the HTTP status of the
 * refusing response (undefined for an error that arrived on an open stream, 0 when the gateway was unreachable).
 */
export class ConvexGatewayError extends Error {
  constructor(status, error) {
    super(error?.message ?? (status === 0 ? "The gateway could not be reached" : `HTTP ${status}`));
    this.name = "ConvexGatewayError";
    this.status = status;
    this.code = error?.code ?? (status === 0 ? "NetworkError" : `Http${status}`);
    this.data = error?.data;
  }
}
