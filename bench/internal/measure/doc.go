// Package measure holds the pieces of the benchmarks that turn
// raw observations into figures: a fixed-resolution latency histogram with
// percentiles, nearest-rank percentiles of a few trials, a count of
// failures that keeps the first one's text, the machine line of a results
// heading, readers of /proc/<pid>/stat (CPU time) and /proc/<pid>/status
// (resident set size), and a reader of the machine's busy and total CPU
// time in /proc/stat.
//
// Nothing here starts goroutines or reads the clock; callers pass times and
// durations in.
package measure
