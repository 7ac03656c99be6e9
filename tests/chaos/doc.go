// Package chaos is otopcua's seeded chaos run (issue 28).
package chaos
