// Package floating moves a floating service address to the Primary of a
// ClusterId, so that a client that knows one endpoint URL follows the
// Primary through a failover without being redundancy-aware.
//
// The package holds the provider-agnostic contract: the verbs, the intent
// a decision produces, the plan a planner makes of it, the executor that
// applies a plan for one provider (linux, aws, oci, azure) and the
// observation an executor makes of who really holds the address. Every
// action carries the ownership epoch (the redundancy epoch of the
// ClusterId); an executor refuses a plan older than the last epoch it
// applied, so a stale owner's late action is fenced.
package floating
