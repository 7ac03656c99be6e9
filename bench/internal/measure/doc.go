// Package measure holds the pieces of the subscription benchmark that turn
// raw observations into figures: a fixed-resolution latency histogram with
// percentiles, and readers of /proc/<pid>/stat (CPU time) and
// /proc/<pid>/status (resident set size).
//
// Nothing here starts goroutines or reads the clock; callers pass times and
// durations in.
package measure
