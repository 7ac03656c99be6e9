// Package uaserver is otopcua's OPC UA service layer: it accepts opc.tcp
// connections, runs the Hello/Acknowledge handshake and the secure channel
// (security None, or Basic256Sha256, Aes128_Sha256_RsaOaep and
// Aes256_Sha256_RsaPss with Sign or SignAndEncrypt: Config.Security, the
// crypto of gopcua's uapolicy, the framing in chansec.go), and implements the session, discovery,
// attribute, view, method and event history services over a NodeStore.
// Subscription services are delegated to the subscription engine. It uses
// gopcua's ua package for the service types and the uacp/uasc message types
// for the handshake. Responses are encoded by uabin (a hand-written encoder that
// writes PublishResponse and ServiceFault byte for byte as ua.Encode does,
// about 70 times faster, and falls back to ua.Encode for every other type)
// into pooled buffers, and framed into MSG chunks here.
//
// It does not use gopcua's server package, which serves every request of
// every session on one goroutine, handshakes serially in its accept loop,
// never expires sessions, answers with wrong RequestHandles and has no
// recover(). Nor does it use uasc.SecureChannel for receiving: that type
// decodes a message before its caller sees the bytes, and gopcua's decoder
// allocates whatever array length a message claims (a 60-byte request
// aborted the process with an out-of-memory error that recover() cannot
// catch). The channel here frames and reassembles chunks itself and runs a
// wire check (package uawire) that bounds every count by the bytes present and
// the nesting depth before anything is decoded.
//
// # Concurrency
//
//   - One goroutine accepts connections. A connection beyond
//     MaxConnections or MaxConnectionsPerAddress is answered ERR
//     BadTcpNotEnoughResources and closed. Each admitted connection gets
//     its own goroutine for the handshake (bounded by
//     Config.HelloTimeout), so a silent TCP client never delays
//     another.
//   - A channel lives by deadlines: OpenSecureChannel within
//     OpenSecureChannelTimeout of the Acknowledge, a session created or
//     activated within CreateSessionTimeout of that, then a request within
//     IdleChannelTimeout of the last one unless a Publish request of the
//     channel waits for its answer. A missed deadline closes the channel
//     with ERR BadTimeout.
//   - Each secure channel has a reader goroutine that reassembles, checks
//     and decodes requests and a worker goroutine that handles them in
//     arrival order. Channels never wait on each other. The reader stops
//     reading while the channel's queued requests hold
//     MaxRequestBytesPerChannel encoded bytes; requests still queued when
//     the channel closes are abandoned, and CreateMonitoredItems gets the
//     channel's context so that a large one stops too. Publish is handed to
//     the engine, which answers it later from its own goroutines; the worker
//     goes on at once.
//   - Every handler runs under recover(): a panic answers a ServiceFault
//     BadInternalError, is logged with its stack, and the channel keeps
//     serving. A request that cannot be decoded is answered with a
//     ServiceFault; a framing or security violation ends only its channel,
//     with an ERR message.
//   - A response is encoded by the goroutine that sends it, before the
//     channel's write lock is taken: responses of one channel encode in
//     parallel, and only the numbering and writing of their chunks (one
//     vectored write per message) is serialised.
//   - Every response carries the request's RequestHandle and a Timestamp;
//     a response larger than MaxResponseSize, or than the client's
//     MaxMessageSize or MaxChunkCount, is replaced by BadResponseTooLarge.
//
// # Sessions
//
// A session ends on CloseSession or when no request arrived for its
// revised timeout (Config.Clock); the engine is then told through
// SessionClosed (on a timeout without deleting the subscriptions: they live
// until their own lifetime ends, so a returning client can transfer them). Closing the secure channel does not end the session
// (Part 4 §5.6): the client reconnects and re-activates it, possibly on a
// new channel. Until ActivateSession a request answers
// BadSessionNotActivated; an unknown authentication token answers
// BadSessionIdInvalid; a request for a session bound to another channel
// answers BadSecureChannelIdInvalid.
//
// Unactivated sessions live in a small budget (MaxUnactivatedSessions,
// per address MaxUnactivatedSessionsPerAddress) and end after
// UnactivatedSessionTimeout. A full budget does not refuse every
// newcomer: evictionVictim (evict.go, pure) picks the oldest session of
// the address holding the most, which ends, its channel closed with ERR
// BadTooManySessions when no other session uses it; the newcomer is
// refused only when its own address holds about as much. A session whose
// password is being checked is outside the budget and takes one of its
// address's MaxPasswordChecksPerAddress slots instead (BadTooManySessions
// beyond, before any decryption or directory call); a refused password
// puts it back into the budget where there is room, without evicting
// anyone, and ends it otherwise.
//
// # Security
//
// A channel's policy and mode are fixed by its first OpenSecureChannel;
// a None channel is always accepted (discovery) but sessions are created
// only on an offered endpoint (BadSecurityPolicyRejected). On a secured
// channel every chunk is verified (and decrypted) before anything reads
// it, and its sequence number must follow the previous one (Part 6
// §6.7.2.4); a failed check ends only that channel with an ERR. A renewal
// issues a new token with new keys; the old one is accepted until the new
// one is used or it expires (lifetime plus a quarter, real time). On a
// None channel sequence numbers are not checked: a forger can always get
// them right there. Session signatures: svc_security.go.
//
// A secured OpenSecureChannel costs two RSA private-key operations, so
// handshake.go (pure, explicit instants, bounded) guards them: the same
// chunk seen within SecureChannelReplayWindow is answered ERR
// BadNonceInvalid before any private-key operation, the same client nonce
// after the decryption and before the signature; a client address gets
// MaxSecureChannelOpensPerAddress Issue and MaxTokenRenewalsPerAddress
// Renew requests a second (token buckets), ERR BadTcpServerTooBusy
// beyond. Only chunks whose signature verified stay remembered. The
// refusal and channel-closed log lines go through a loglimit.Limiter: one
// a minute per address and kind, with the count suppressed.
//
// # Application identities
//
// A channel presents one application identity, chosen once from the
// local address its connection was accepted on (appidentity.go): the
// Config.Identities entry of that address, else the server's own
// (ApplicationURI, Security.Certificate and PrivateKey). Everything the
// server signs, decrypts or describes on the channel is that identity's:
// the receiver thumbprint an OpenSecureChannel must name, the key that
// decrypts and signs it, CreateSession's certificate and signature, the
// certificate ActivateSession's client signature covers, the
// ApplicationDescription and ServerCertificate of GetEndpoints,
// FindServers and CreateSession, and the key that opens a UserName token.
// A redundant set's floating address carries the identity its members
// share: a client that trusted it once sees the same certificate on
// whichever member holds the address. Sessions, subscriptions, limits and
// the address space are the server's whatever the identity.
//
// # Users and rights
//
// ActivateSession (identity.go) accepts an anonymous or absent token
// (unless DisableAnonymous: BadIdentityTokenRejected), a UserName token
// whose password is encrypted per Part 4 §7.41 with the server
// certificate's key under Basic256Sha256 and ends with the session's last
// server nonce (checked by Users.Verify; a clear-text password is
// BadIdentityTokenInvalid), and an X509 token whose signature over the
// server certificate and nonce verifies and whose certificate
// ValidateUserCertificate trusts (then Users.Role). UserName and X509 are
// offered only with a certificate (userTokenPolicies, used by
// GetEndpoints and CreateSession). Every refusal counts in RejectedSessions
// and against the client address; MaxActivationFailuresPerAddress within
// ActivationLockout lock the address out. The session keeps its user, role
// and the role's rights (Config.Authorization); Read needs RightRead, Write
// RightWrite (checked before the NodeStore sees the write, so before any
// write hook, Primary gate or device), Call the method's Right, each
// answering BadUserAccessDenied per operation.
//
// # Methods
//
// Call (Part 4 §5.11.2) runs the methods registered with RegisterMethod,
// keyed by method NodeId; any other method answers BadMethodInvalid. For
// each CallMethodRequest, in this order: a missing id answers
// BadNodeIdInvalid; an unknown object BadNodeIdUnknown; an object that is
// not an Object or ObjectType BadNodeIdInvalid; an unregistered method, or
// one that is not a HasComponent of the object, of its type definition or
// of a supertype, BadMethodInvalid; fewer input arguments than the method
// declares BadArgumentsMissing, more BadTooManyArguments; an argument of
// another built-in type (a null Variant or an array included)
// BadInvalidArgument with BadTypeMismatch in its InputArgumentResults.
// Then the method runs, on the channel's worker goroutine (so it must be
// quick), and its status and output arguments are the result; a panic is
// BadInternalError. The method learns the session (SessionInfo: the
// engine's SessionID, the SessionId, its name, its user, role and rights).
//
// # History
//
// HistoryRead (Part 4 §5.10.3) serves ReadEventDetails (Part 11 §6.5.2)
// from the EventHistory set with SetEventHistory; other details, or no
// provider, answer BadHistoryOperationUnsupported per node, and missing
// details BadHistoryOperationInvalid. At most MaxNodesPerHistoryReadEvents
// nodes per request (BadTooManyOperations). Per node: an unknown node
// answers BadNodeIdUnknown, a node whose EventNotifier lacks the
// HistoryRead bit BadHistoryOperationUnsupported, a filter that would fail
// an event item (no select clause, an unknown field, ...)
// BadEventFilterInvalid, fewer than two of StartTime, EndTime and
// NumValuesPerNode BadInvalidTimestampArgument. The select clauses (and a
// where clause) apply as for event items; a field an event lacks is a null
// Variant. With both times, NumValuesPerNode is the page size (0: the
// server's) and EndTime before StartTime reads newest first; with one
// time it bounds the whole read. TimestampsToReturn is ignored. A page
// holds at most MaxHistoryEventsPerNode events and stops before its events
// would pass the node's share of MaxResponseSize; what remains comes with
// a continuation point. A session holds at most
// MaxHistoryContinuationPoints of them, the oldest released first; a
// released, unknown or other node's point answers
// BadContinuationPointInvalid. ReleaseContinuationPoints releases the
// request's points and returns no events. A node with nothing in its
// domain answers GoodNoData.
//
// # Duties of the caller
//
//  1. Give New a NodeStore that honours its contract (concurrency-safe,
//     non-blocking, never panics on client input) and the engine.
//  2. Register handler overrides with Handle before Start; methods with
//     RegisterMethod (any time) and the event history with
//     SetEventHistory (any time).
//  3. Call Close before closing the engine; Close ends every session
//     (engine.SessionClosed(id, true)) and waits for running handlers, which
//     must therefore honour their context.
//
// # Known limits
//
// UserAccessLevel and UserExecutable are not
// computed per session (a Viewer sees a writable tag as writable and is
// refused on the Write); Browse, HistoryRead and the subscription
// services do not check RightRead. A client's
// address is its IP address, so clients behind one NAT share the
// per-address limits. Every limit refusal and deadline is counted by name
// (Stats, the Limit… constants).
package uaserver
