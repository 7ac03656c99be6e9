// Package aws is the executor of the floating address on AWS: the address
// is a secondary private IPv4 address of an elastic network interface
// (ENI), moved between the members' ENIs with the EC2 API.
//
// The executor interprets the floating.OpAWS* actions of a plan:
//
//   - aws-assign-private-ip: AssignPrivateIpAddresses on this node's ENI,
//     with AllowReassignment as the action says (a reassign takes the
//     address from a holder that cannot give it up itself). An address
//     held by a foreign ENI (neither this node's nor a known member's) is
//     never taken: the action fails with floating.ErrConflict.
//   - aws-confirm-metadata: the move is asynchronous (the API answers
//     before the network has remapped the address), so this polls instance
//     metadata (IMDSv2: a PUT for a session token, then GET
//     network/interfaces/macs/<mac>/local-ipv4s) until the address is
//     listed or the action's timeout ends.
//   - aws-unassign-private-ip: UnassignPrivateIpAddresses on this node's
//     ENI; an address this ENI no longer holds is already released.
//
// Observe asks DescribeNetworkInterfaces which ENI lists the address as a
// private IP and names it self, a member (Config.Known) or foreign.
//
// # Fencing
//
// Apply admits the plan's ownership epoch into the local FileFence before
// it sends anything: a plan older than the last one applied on this node
// is refused with a *floating.StaleEpochError and no request.
//
// Across nodes the epoch is also recorded as the ENI tag
// "otopcua-floating-epoch": an assign or unassign first reads the tags of
// this node's ENI and of the address's current holder, refuses (again a
// *floating.StaleEpochError, nothing sent) when either carries a higher
// epoch than the plan, then tags this node's ENI — and, on a reassign, the
// old holder's — with the plan's epoch before it moves the address. A
// stale owner on another node that wakes up with an old plan therefore
// finds its own ENI, or the new holder's, marked with the newer epoch.
//
// What EC2 cannot guarantee: it has no conditional write, so the read of
// the tags and the assign are two requests; two nodes that both pass the
// check within that window both assign, and the last writer wins (EC2's
// own semantics for AllowReassignment). The tag narrows the window of a
// late stale action from "forever" to one round trip; the ownership epoch
// of the redundancy layer and drift reconciliation close the rest.
//
// # Permissions
//
// The instance profile (or the credentials given) needs
// ec2:DescribeNetworkInterfaces, ec2:AssignPrivateIpAddresses,
// ec2:UnassignPrivateIpAddresses and ec2:CreateTags on the members'
// network interfaces; instance metadata must answer IMDSv2 from the
// process (a hop limit of 2 when it runs in a container). Only IPv4: EC2
// moves IPv6 addresses with other calls.
//
// Requests are signed with SigV4 from the aws-sdk-go-v2 credential chain
// (or the credentials given); the few EC2 Query calls are written here
// rather than linking the EC2 service client.
package aws
