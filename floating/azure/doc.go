// Package azure is the executor of the floating address on Azure: the
// address is a static private IP of an ipConfiguration of a network
// interface (NIC), moved between the members' NICs with Azure Resource
// Manager.
//
// Azure has no single atomic reassign, so a move is two steps, each a read
// of the NIC (GET, with its ETag) and a write of the whole NIC (PUT with
// If-Match):
//
//   - azure-remove-ip-configuration: the NIC that holds the address
//     (Target, or found by listing the resource group's NICs) is written
//     back without the ipConfiguration carrying it. A foreign NIC (no known
//     member) is never written: floating.ErrConflict.
//   - azure-add-ip-configuration: this node's NIC is written back with a
//     new ipConfiguration (the action's "ip-configuration" name, the
//     address static, in the subnet of the NIC's primary ipConfiguration).
//
// A 412 Precondition Failed (the NIC changed between the read and the
// write) and Azure's PrivateIPAddressInUse (the address is still on
// another NIC) wrap floating.ErrConflict: the caller re-observes and
// re-plans. A write answered with provisioningState Updating is followed
// by reads until the NIC is Succeeded (or Failed, an error).
//
// Observe lists the NICs of the resource group and names the one whose
// ipConfigurations carry the address.
//
// # Fencing
//
// Apply admits the plan's epoch into the local FileFence before it sends
// anything (a stale plan: *floating.StaleEpochError, no request).
//
// Across nodes the epoch is the NIC tag "otopcua-floating-epoch", written
// in the same conditional PUT as the change of ipConfigurations: the
// remove step stamps the old holder's NIC, the add step this node's. A
// step refuses (nothing written) when its NIC carries a higher epoch than
// the plan, and a concurrent writer makes the PUT fail with 412, so each
// step's check and write are atomic. What Azure cannot guarantee is the
// pair: between the two steps nobody holds the address, and when the add
// fails after the remove the address stays unheld until the next plan
// (drift reconciliation re-seizes it).
//
// # Permissions
//
// The identity needs Microsoft.Network/networkInterfaces/read and /write
// on the members' NICs and
// Microsoft.Network/virtualNetworks/subnets/join/action on their subnet
// (the built-in Network Contributor role on the resource group holds all
// three).
//
// Requests go through the azcore pipeline (retries, bearer token) with a
// TokenCredential, by default azidentity's DefaultAzureCredential (which
// includes the VM's managed identity).
package azure
