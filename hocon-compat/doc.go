// Package hoconcompat reads the cluster settings of an existing Akka.NET
// akka.conf (HOCON) and renders otopcua's effective cluster settings back
// as HOCON, so that an operator migrating from the reference product can
// keep the file, and so that a running node can show what it actually
// installed rather than what some file says.
//
// # What it owns
//
//   - Parse: a HOCON reader for the subset real akka.conf files use:
//     objects with braces and dotted keys (akka.cluster.roles = [...]),
//     "=", ":" and "key { ... }", quoted, """triple-quoted""" and unquoted
//     strings, numbers, booleans, lists, value concatenation ("15 s"),
//     "#" and "//" comments, repeated keys (a later value wins, objects
//     merge), "+=", and substitutions ${path} and ${?path} resolved
//     against the whole document, including self-references
//     (path = ${path} [...]). "include" lines are skipped with a warning;
//     a substitution the document does not define is left unset with a
//     warning (HOCON would read an environment variable; otopcua does not,
//     so that the result does not depend on the shell it is computed in).
//     Errors are *SyntaxError values with file:line:column.
//   - Extract: the settings otopcua uses, as ClusterSettings (each one
//     either Set, with the position it was written at, or unset): the
//     downing provider class and split-brain-resolver block, the failure
//     detector block, seed nodes, roles, join timers, and the
//     otopcua.cluster block (self-form-after, down-on-connection-refused)
//     that Render adds. Values otopcua cannot use are listed in one
//     *ExtractError naming the key, the value as written and the accepted
//     values.
//   - Effective: the precedence between appsettings.json (with its
//     OTOPCUA_ environment overrides) and akka.conf, as a pure function.
//   - Render: the effective settings as HOCON an Akka.NET user reads
//     directly, which Extract reads back to the same settings.
//
// # Precedence
//
// Several HOCON fragments competing for one key is how the reference
// product ended up with a file that looked right and a node that ran
// something else. otopcua therefore has exactly one rule, applied key by
// key by Effective:
//
//  1. A Cluster:* key set explicitly in appsettings.json or through an
//     OTOPCUA_ environment variable wins (Cluster:SplitBrainResolverStrategy,
//     Cluster:AutoDownUnreachableAfter, Cluster:StableAfter,
//     Cluster:DownIfAlone, Cluster:StaticQuorumSize,
//     Cluster:DownOnConnectionRefused, Cluster:FailureDetector:*,
//     Cluster:SeedNodes, Cluster:Roles, Cluster:SelfFormAfter).
//  2. A key the JSON leaves at its default takes the akka.conf value when
//     the file gives one.
//  3. Otherwise the default applies; settings only akka.conf can give
//     (down-all-when-unstable, the strategy roles, lease settings,
//     min-std-deviation, max-sample-size, seed-node-timeout,
//     retry-unsuccessful-join-after) take Akka's defaults.
//
// When both sources set a key to different values the JSON value wins and
// a Warning names both, with the akka.conf position. The strategy comes
// from akka.conf only through akka.cluster.downing-provider-class
// (Akka.Cluster.AutoDowning → auto-down;
// Akka.Cluster.SBR.SplitBrainResolverProvider, plain or
// assembly-qualified → split-brain-resolver.active-strategy, Akka.NET's
// keep-majority when absent). An active-strategy without a provider class
// selects nothing and is reported: in the reference product the JSON key is
// what installs the provider, so such a file never ran that strategy.
// Cluster:DownOnConnectionRefused set nowhere follows the effective
// strategy (on for auto-down only).
//
// ExplicitKeys tells which keys a JSON file and an environment set;
// LoadEffective runs the whole chain for a loaded config.Config.
//
// # Invariants
//
//   - Parse never panics, on any input (FuzzParse), and bounds what it
//     builds: nesting depth and substitution expansion are limited.
//   - Extract(Parse(Render(e))) followed by Effective with no explicit
//     JSON key gives back e, for every strategy.
//   - Everything here is a pure function of its inputs except
//     LoadEffective, which reads the akka.conf file; no package state.
//
// # Duties of the caller
//
//  1. Compute explicit with ExplicitKeys from the same file bytes and
//     environment that config.Load read.
//  2. Print or log every Warning; they are how an operator learns that a
//     line of akka.conf has no effect.
//  3. Refuse to start when LoadEffective returns an error: it names the
//     key, the value and what is accepted.
//  4. Report what the node installed (not what the files say) with Render,
//     e.g. on GET /api/cluster/config.
package hoconcompat
