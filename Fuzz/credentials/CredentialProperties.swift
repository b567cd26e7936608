// The properties read the package's internal types through `@testable import`, which a release build (no testing
// enabled) cannot compile; there the target only says so (`swift build -c release` builds every target).
#if DEBUG
    import ConvexValues
    import FuzzSupport

    @testable import ConvexGateway

    /// What must hold for the credentials and resume ids a client sends back: a forged or mangled one is refused.
    ///
    /// The first input byte picks the reader; the rest is the text (or, for a mangled ticket, where to change a genuine
    /// one):
    /// - `Last-Event-ID` (`ResumeID`): text that reads as a resume id writes back to text that reads as the same id;
    /// - a stream ticket as text: refused with 401 unless it is the one genuine ticket, which opens to its token;
    /// - a genuine ticket with bytes changed at positions the input names: any change is refused with 401;
    /// - a token given to `POST /stream-tickets`: refused with 401, or sealed into a ticket that opens to the same token
    ///   (never past the token's own expiry);
    /// - an `Authorization` header and the auth cookie (`Cookie`): 401, anonymous, or a bearer token of printable ASCII
    ///   without spaces.
    enum CredentialProperties {
        static let now: Int64 = 1_800_000_000_000

        static let tickets: StreamTickets = {
            guard let key = try? StreamTicketKey(material: Array(repeating: 7, count: 32), source: "fuzz") else {
                fail("the fuzz ticket key does not load")
            }
            return StreamTickets(key: key, maxLifetime: .seconds(3600))
        }()

        /// A JWT whose payload is `{"sub":"fuzz","exp":1900000000}` (the signature is not read).
        static let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmdXp6IiwiZXhwIjoxOTAwMDAwMDAwfQ.c2lnbmF0dXJl"

        static let genuine: String = {
            guard let issued = try? tickets.issue(for: token, now: now) else { fail("the fuzz token does not seal") }
            return issued.ticket
        }()

        static func check(_ bytes: [UInt8]) {
            guard let selector = bytes.first else { return }
            let rest = Array(bytes.dropFirst())
            let text = String(decoding: rest, as: UTF8.self)
            switch selector % 6 {
            case 0: checkResumeID(text, count: Int(selector / 6 % 5))
            case 1: checkTicketText(text)
            case 2: checkMangledTicket(rest)
            case 3: checkIssue(text)
            case 4: checkAuthorization(text)
            default: checkCookie(text)
            }
        }

        static func checkResumeID(_ text: String, count: Int) {
            guard let id = ResumeID(parsing: text, count: count) else { return }
            require(
                id.held.count == count, "resume id \(excerpt(text.utf8)) read with \(id.held.count) of \(count) hashes")
            require(
                ResumeID(parsing: id.text, count: count) == id,
                "resume id \(excerpt(text.utf8)) writes back as \(id.text), which reads differently")
        }

        static func checkTicketText(_ text: String) {
            do throws(GatewayError) {
                let opened = try tickets.open(text, now: now)
                require(text == genuine && opened == token, "a forged ticket opened: \(excerpt(text.utf8))")
            } catch {
                require(error.code == .unauthenticated, "ticket \(excerpt(text.utf8)) refused with \(error.code)")
            }
        }

        static func checkMangledTicket(_ changes: [UInt8]) {
            var ticket = Array(genuine.utf8)
            for pair in stride(from: 0, to: changes.count - 1, by: 2) {
                ticket[Int(changes[pair]) % ticket.count] = changes[pair + 1]
            }
            let text = String(decoding: ticket, as: UTF8.self)
            guard text != genuine else { return }
            do throws(GatewayError) {
                _ = try tickets.open(text, now: now)
                fail("a changed ticket opened: \(excerpt(text.utf8)) (genuine \(genuine))")
            } catch {
                require(error.code == .unauthenticated, "changed ticket refused with \(error.code)")
            }
        }

        static func checkIssue(_ token: String) {
            do throws(GatewayError) {
                let issued = try tickets.issue(for: token, now: now)
                require(issued.expiresAt > now, "ticket issued already expired for \(excerpt(token.utf8))")
                require(
                    (try? tickets.open(issued.ticket, now: now)) == token,
                    "a ticket issued for \(excerpt(token.utf8)) does not open to it")
                require(
                    (try? tickets.open(issued.ticket, now: issued.expiresAt)) == nil,
                    "a ticket issued for \(excerpt(token.utf8)) opens at its expiry")
            } catch {
                require(error.code == .unauthenticated, "token \(excerpt(token.utf8)) refused with \(error.code)")
            }
        }

        static func checkAuthorization(_ header: String) {
            do throws(GatewayError) {
                checkIdentity(try CallerCredentials.identity(authorization: header), from: header)
            } catch {
                require(
                    error.code == .unauthenticated, "Authorization \(excerpt(header.utf8)) refused with \(error.code)")
            }
        }

        static func checkCookie(_ header: String) {
            let credentials = CallerCredentials(cookieName: "convex_token", tickets: tickets, now: { now })
            let request = GatewayRequest(method: "GET", rawPath: "/query/messages:list", headers: ["cookie": header])
            do throws(GatewayError) {
                let identity = try credentials.identity(of: request, ticket: nil)
                checkIdentity(identity, from: header)
            } catch {
                require(error.code == .unauthenticated, "Cookie \(excerpt(header.utf8)) refused with \(error.code)")
            }
        }

        static func checkIdentity(_ identity: UpstreamIdentity, from header: String) {
            guard case .bearer(let token) = identity else { return }
            require(
                !token.isEmpty && token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F },
                "bearer token \(excerpt(token.utf8)) read from \(excerpt(header.utf8)) is not printable ASCII")
            require(header.contains(token), "bearer token \(excerpt(token.utf8)) is not in \(excerpt(header.utf8))")
        }
    }
#else
    import FuzzSupport

    enum CredentialProperties {
        static func check(_ bytes: [UInt8]) { internalTypesNeedADebugBuild("fuzz-credentials") }
    }
#endif
