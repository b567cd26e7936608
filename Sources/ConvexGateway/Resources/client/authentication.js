/**
 * Authentication: the page's token callback, the stream tickets minted from its tokens (`POST /stream-tickets`: a
 * stream carries a ticket in its URL, so the token never does), and the headers of a call. Part of client.js (see
 * gateway.js).
 */

import { ConvexGatewayError } from "./errors.js";

export class Authentication {
  #base;
  #token;
  /** The last ticket minted: `{ token, ticket, expiresAt }`. */
  #ticket = null;

  /**
   * @param {string} base The gateway's base URL.
   * @param {(options: { forceRefresh: boolean, forceRefreshToken: boolean }) => Promise<string | null | undefined> |
   *   string | null | undefined} [token] The page's token callback; none: anonymous (or the gateway's auth cookie).
   */
  constructor(base, token) {
    this.#base = base;
    this.#token = token ?? (() => null);
  }

  /** The current token, null when signed out; `forceRefresh` asks the callback for a fresh one (after a refusal). */
  async token(forceRefresh) {
    return (await this.#token({ forceRefresh, forceRefreshToken: forceRefresh })) ?? null;
  }

  /**
   * A stream ticket for the current token (null when signed out): the last one minted while it is for the same token
   * and has more than 5 s left, unless `forceRefresh`. Rejects with a ConvexGatewayError (status 0: unreachable).
   */
  async streamTicket(forceRefresh) {
    const token = await this.token(forceRefresh);
    if (!token) return null;
    const last = this.#ticket;
    if (!forceRefresh && last?.token === token && last.expiresAt - Date.now() > 5000) return last.ticket;
    let response;
    try {
      response = await fetch(`${this.#base}/stream-tickets`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
      });
    } catch {
      throw new ConvexGatewayError(0);
    }
    const body = await response.json().catch(() => null);
    if (!response.ok) throw new ConvexGatewayError(response.status, body?.error);
    this.#ticket = { token, ticket: body.ticket, expiresAt: body.expiresAt };
    return body.ticket;
  }
}

/**
 * The headers of a call: JSON, `Authorization: Bearer <token>` when there is a token, and `Convex-Min-Timestamp` when
 * the client has seen a timestamp.
 */
export function callHeaders(token, timestamp) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (timestamp !== undefined) headers["Convex-Min-Timestamp"] = timestamp;
  return headers;
}
