// Package floatcloud drills the floating address's cloud path on real
// processes: two `otopcua host` nodes with Redundancy:FloatingAddress on a
// provider whose API is a loopback fake run by the test (floating/aws's
// awsfake: the EC2 Query API with SigV4 checks and instance metadata that
// trails the API). The fake is the only thing not real; the nodes, their
// Config DB heartbeat stream, the election and the SIGKILL are.
package floatcloud
