// Package mirror keeps the OPC UA sessions and subscriptions of one member
// of a redundant set on the other driver members of its ClusterId
// (OpcUa:RedundancySupport HotAndMirrored), so that a client whose server
// dies activates the same session on a survivor and gets every value it
// was owed.
package mirror
