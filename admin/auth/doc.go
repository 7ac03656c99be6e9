// Package auth implements admin.Authenticator: the logins, browser
// sessions and API tokens of otopcua's admin pages, over the admin_users
// table of the Config DB (configdb).
//
// What it owns:
//
//   - Passwords: bcrypt hashes (HashPassword, cost 12 by default) of 10 to
//     72 bytes (CheckPasswordRules). An unknown user name is compared
//     against a dummy hash of the same cost and refused with the same
//     admin.ErrBadCredentials as a wrong password, so neither the answer
//     nor its time tells whether the name exists.
//   - Failure waits, not locks: after 5 failed logins of one user name
//     from one client address (FreeFailures), each further attempt of that
//     name from that address must wait 1 s, then 2, 4, 8… s, at most 5 min
//     (FirstWait, MaxWait); after 50 failures from one address for any
//     names (FreeAddressFailures), the address waits the same way. An
//     attempt inside a wait is refused unchecked (*admin.ThrottledError,
//     also for the right password) and counted as one more failure of
//     that key, restarting its wait; a key idle for 15 min starts afresh
//     (ForgetAfter). The same name from any other address is never slowed,
//     so nobody can lock a name from afar. Names that cannot be users
//     count against the address only; a success forgets the name's
//     failures from that address only. Login (the admin page) and Verify
//     (OPC UA UserName tokens) share the tables.
//   - Per node: the tables live in this node's memory. A count shared
//     through the Config DB would let an attacker's failures on one node
//     make a name wait on the other; per node, the worst an attacker gets
//     is a wait for its own address (on each node it tries).
//   - Bounded: each table (name-and-address, address) holds at most
//     MaxTracked (10,000) keys, least recently failed dropped first in
//     O(1); a flood of 100,000 distinct names or addresses keeps the
//     latest 10,000 and forgets the rest early (each flooding address still
//     waits after its own 50 failures).
//   - Load: at most 4 bcrypt checks run at once; a login waits at most 2 s
//     for a slot and at most 64 wait (admin.ErrBusy beyond). Bearer and
//     HasUsers queries are bounded the same way (16 at once), and each
//     Config DB query by a 5 s timeout, so a flood of requests or a hung
//     database costs the other users a bounded share of the node.
//   - Sessions: in this node's memory only (a login on one node of a pair
//     does not open a session on the other). Ids and CSRF tokens are 32
//     bytes from crypto/rand, base64url. A session ends 30 min after its
//     last use and 12 h after login, whichever is first; a user holds at
//     most 20 (a 21st login ends the oldest) and the node at most 10,000
//     (beyond, the least recently used ends). Every minute a used session
//     reads its user again: a removed user, a new password or a new role
//     ends it.
//   - API tokens: "otk_" and 32 random bytes, base64url (NewToken). Only
//     the hex SHA-256 is stored; issuing a new token replaces the old one.
//
// Locks: Service.mu guards the session and failure tables and the
// HasUsers answer; it is never held during a Config DB query or a bcrypt
// check. The check and lookup slots are buffered channels, taken before
// and released after the work they bound; mu is never held while waiting
// for one.
//
// Duties of the caller (the admin HTTP handlers):
//
//  1. Pass the client's address (the host of http.Request.RemoteAddr, or
//     of the trusted proxy's forwarded address) to Login.
//  2. Put Session.ID in an HttpOnly, SameSite=Strict cookie (Secure over
//     TLS) and require Session.CSRFToken on every state-changing request.
//  3. Map admin.ErrBadCredentials to 401, *admin.ThrottledError to 429
//     with Retry-After (the seconds until its Until, rounded up) on the
//     admin page and to BadUserAccessDenied on OPC UA, admin.ErrBusy to 503
//     with Retry-After, any other error to 500 without its text.
//  4. Set Options.Throttled to count the throttled attempts
//     (otopcua_auth_throttled_total{surface}).
package auth
