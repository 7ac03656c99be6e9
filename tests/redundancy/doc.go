// Package redundancy holds the process smoke test of the redundancy
// runtime: two real `otopcua host` processes sharing one Config DB, read
// over OPC UA the way a SCADA client reads them (Server.ServiceLevel), and
// a SIGKILL of the Primary.
package redundancy
