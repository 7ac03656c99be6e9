// Package floatingidentity holds the multi-process test of the floating
// address's shared application identity: two real `otopcua host`
// processes on loopback, each presenting the identity that `otopcua pki
// floating` stored once in their shared Config DB on a loopback address
// standing in for the floating address (EnvTestFloatingIdentityAddr), and
// a secured client that trusts that one certificate only.
package floatingidentity
