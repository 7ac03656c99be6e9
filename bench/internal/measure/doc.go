// Package measure holds the pieces of the benchmarks that turn
// raw observations into figures: a fixed-resolution latency histogram with
// percentiles, nearest-rank percentiles of a few trials, the machine line
// of a results heading, and readers of /proc/<pid>/stat (CPU time) and
// /proc/<pid>/status (resident set size).
//
// Nothing here starts goroutines or reads the clock; callers pass times and
// durations in.
package measure
