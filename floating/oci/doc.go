// Package oci is the executor of the floating address on Oracle Cloud
// Infrastructure: the address is a secondary private IP object of a VNIC,
// moved between the members' VNICs with the Core Services REST API.
//
// The executor interprets the floating.OpOCI* actions of a plan with the
// semantics of the CLI's `assign-private-ip --unassign-if-already-assigned`:
//
//   - oci-assign-private-ip: ListPrivateIps (subnet + address) finds the
//     private IP object. None: CreatePrivateIp on this node's VNIC. On
//     another member's VNIC: with unassign-if-already-assigned,
//     UpdatePrivateIp moves it to this node's VNIC; without it, the action
//     fails with floating.ErrConflict. On a foreign VNIC (no known member),
//     or as a VNIC's primary IP, it is never taken (floating.ErrConflict).
//   - oci-unassign-private-ip: DeletePrivateIp of the object when this
//     node's VNIC holds it; otherwise there is nothing to give up.
//
// Observe is ListPrivateIps by subnet and address.
//
// # Fencing
//
// Apply admits the plan's epoch into the local FileFence before it sends
// anything (a stale plan: *floating.StaleEpochError, no request).
//
// Across nodes the epoch is the freeform tag "otopcua-floating-epoch" of
// the private IP object itself, written in the same UpdatePrivateIp that
// moves it, under If-Match of the ETag read with GetPrivateIp. A stale
// owner's plan finds the newer epoch on the object and is refused; a
// concurrent writer between the read and the move makes the update fail
// with 412, which is floating.ErrConflict (re-observe, re-plan). So on OCI
// the check of the tag and the move are one atomic step.
//
// What it cannot guarantee: a release deletes the object and its tag with
// it, so while nobody holds the address there is no recorded epoch; a
// stale owner's seize then creates the object afresh and is fenced only by
// its own local fence file. Drift reconciliation by the rightful owner
// undoes it at the next interval.
//
// # Permissions
//
// The principal (a user, or the instance in a dynamic group) needs, in the
// compartment of the VNICs and the subnet, the policy verbs
// "manage private-ips", "use vnics" and "use subnets": create, move and
// delete a private IP, and assign it to or unassign it from a VNIC. Only
// IPv4: OCI keeps IPv6 addresses as other objects.
//
// Requests are signed with the oci-go-sdk request signer from its
// configuration providers (the config file and environment by default);
// the REST calls are written here rather than linking the core package.
package oci
