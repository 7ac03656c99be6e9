// Package upgrade is the rolling-upgrade test (placeholder doc, rewritten below).
package upgrade
