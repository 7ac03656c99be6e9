// Package pki owns the server's application instance certificate and the
// trust store that decides which OPC UA clients may open a secure channel.
//
// A store is a directory with the layout OPC UA products share:
//
//	own/certs       the server's certificate (otopcua.der)
//	own/private     its RSA key (otopcua.pem, mode 0600)
//	trusted/certs   client certificates and CAs the operator trusts
//	trusted/crl     revocation lists of trusted CAs
//	issuers/certs   CAs used only to complete chains (not trusted by themselves)
//	issuers/crl     revocation lists of those CAs
//	rejected/certs  refused untrusted certificates, named THUMBPRINT.der, at most 1,000
//	                (an index in memory, re-read at most once a minute: a write
//	                evicts the oldest first and never lists the directory)
//
// Invariants:
//
//   - The own certificate is generated once and never replaced by this
//     package: a restart, a new host name or a new host list keep its
//     thumbprint. A certificate for another ApplicationUri is refused,
//     not replaced.
//   - Validate never accepts a certificate that no certificate of its chain
//     in trusted/certs vouches for, unless AutoAcceptUntrusted is set, and
//     then only after writing it to trusted/certs.
//   - The trust lists are re-read when the files of trusted/ or issuers/
//     change, checked at most once per ReloadInterval; Trust, Reject and
//     Remove on the same Store take effect on the next Validate.
//
// Duties of the caller (the secure channel):
//
//  1. Open the store once at start-up and call ApplicationIdentity before
//     the endpoint listens; a failure stops start-up.
//  2. Call Validate with the client's SenderCertificate and the
//     ApplicationUri of its CreateSession request, and answer a
//     *ValidationError with its Code (its StatusCode method).
//  3. Never cache Validate's answer: the store caches what can be cached
//     and an operator's change must reach the next channel.
package pki
