package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/spf13/cobra"

	"github.com/otopcua/otopcua/history/aggregate"
)

// historyFlags are the flags of "otopcua client history".
type historyFlags struct {
	from, to  string
	max       int
	aggregate string
	interval  time.Duration
}

func (c *cli) clientHistoryCmd(g *clientFlags) *cobra.Command {
	f := &historyFlags{}
	cmd := &cobra.Command{
		Use:   "history NODE",
		Short: "Read the recorded values of a node (HistoryRead)",
		Long: `Read NODE's history on the active server: the raw values between --from and
--to (newest first when --to is before --from), or with --aggregate one
value per --interval (Part 13: ` + strings.Join(aggregateNames(), ", ") + `).
Times are RFC 3339 (2026-12-07T12:00:00Z) or a duration before now (-1h,
-00:10:00); --to defaults to now, --from to an hour before --to.
Text: one line per value, TIME  VALUE  TYPE  STATUS. Exits 1 when the
server refuses the read. See docs/history.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			nodes, err := parseNodes(args)
			if err != nil {
				return err
			}
			details, err := f.details(time.Now())
			if err != nil {
				return err
			}
			opts, err := g.options()
			if err != nil {
				return err
			}
			p := &printer{w: c.stdout, json: g.json}
			return withSession(cmd.Context(), opts, func(ctx context.Context, s session) error {
				return runHistory(ctx, s, p, nodes[0], details, f.max)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "start time: RFC 3339, or a duration before now such as -1h (default: an hour before --to)")
	fl.StringVar(&f.to, "to", "", "end time, as --from (default: now)")
	fl.IntVar(&f.max, "max", 0, "print at most this many values (0: all)")
	fl.StringVar(&f.aggregate, "aggregate", "", "an aggregate ("+strings.Join(aggregateNames(), ", ")+") instead of raw values")
	fl.Var(durationFlag{&f.interval}, "interval", "the aggregate's processing interval (default: the whole range, one value)")
	return cmd
}

func aggregateNames() []string {
	var out []string
	for _, k := range aggregate.Kinds() {
		out = append(out, k.String())
	}
	return out
}

// details turns the flags into HistoryReadDetails, now being the time the
// relative times count back from.
func (f *historyFlags) details(now time.Time) (any, error) {
	to := now
	if f.to != "" {
		t, err := parseHistoryTime(f.to, now)
		if err != nil {
			return nil, usageErr("--to %q: %v", f.to, err)
		}
		to = t
	}
	from := to.Add(-time.Hour)
	if f.from != "" {
		t, err := parseHistoryTime(f.from, now)
		if err != nil {
			return nil, usageErr("--from %q: %v", f.from, err)
		}
		from = t
	}
	if from.Equal(to) {
		return nil, usageErr("--from and --to are the same time (%s)", from.Format(time.RFC3339Nano))
	}
	if f.max < 0 {
		return nil, usageErr("--max %d: accepted values are 0 (all) or more", f.max)
	}
	if f.aggregate == "" {
		if f.interval != 0 {
			return nil, usageErr("--interval needs --aggregate")
		}
		return &ua.ReadRawModifiedDetails{StartTime: from, EndTime: to}, nil
	}
	names := aggregateNames()
	i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, f.aggregate) })
	if i < 0 {
		return nil, usageErr("--aggregate %q: accepted values are %s", f.aggregate, strings.Join(names, ", "))
	}
	if f.interval < 0 {
		return nil, usageErr("--interval %v: accepted values are durations of 0 (one value for the range) or more", f.interval)
	}
	return &ua.ReadProcessedDetails{StartTime: from, EndTime: to, ProcessingInterval: float64(f.interval) / float64(time.Millisecond),
		AggregateType:          []*ua.NodeID{aggregate.Kinds()[i].NodeID()},
		AggregateConfiguration: &ua.AggregateConfiguration{UseServerCapabilitiesDefaults: true}}, nil
}

// parseHistoryTime reads RFC 3339, or "-DURATION" before now.
func parseHistoryTime(s string, now time.Time) (time.Time, error) {
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		var d time.Duration
		if err := (durationFlag{&d}).Set(rest); err != nil {
			return time.Time{}, fmt.Errorf("accepted values are RFC 3339 times or -DURATION: %v", err)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("accepted values are RFC 3339 times such as 2026-12-07T12:00:00Z, or -DURATION such as -1h")
	}
	return t, nil
}

// historyLine is one value in JSON.
type historyLine struct {
	Node            string `json:"node"`
	Value           any    `json:"value"`
	DataType        string `json:"dataType"`
	Status          string `json:"status"`
	SourceTimestamp string `json:"sourceTimestamp,omitempty"`
	Server          string `json:"server"`
}

func runHistory(ctx context.Context, s session, p *printer, node *ua.NodeID, details any, max int) error {
	n := 0
	var perr error
	st, err := s.HistoryRead(ctx, node, details, func(dv *ua.DataValue) bool {
		v := variantValue(dv.Value)
		text := strings.Join([]string{lineTime(dv.SourceTimestamp), textValue(v), typeName(dv.Value), statusName(dv.Status)}, "  ")
		if perr = p.line(text, historyLine{Node: node.String(), Value: jsonValue(v), DataType: typeName(dv.Value),
			Status: statusName(dv.Status), SourceTimestamp: jsonTime(dv.SourceTimestamp), Server: s.Active().URI}); perr != nil {
			return false
		}
		n++
		return max == 0 || n < max
	})
	switch {
	case err != nil:
		return failure(err)
	case perr != nil:
		return perr
	case uint32(st)>>30 == 2:
		return failure(fmt.Errorf("HistoryRead of %s: %w", node, st))
	}
	return nil
}
