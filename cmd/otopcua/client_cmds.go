package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/spf13/cobra"

	"github.com/otopcua/otopcua/opcua/client"
)

// errNotGood: a read or write result was not Good. Its lines are printed
// already; the command exits 1 without a further message.
var errNotGood = &exitError{code: exitFailure}

func (c *cli) clientReadCmd(g *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "read NODE...",
		Short: "Read the Value of nodes",
		Long: `Read the Value attribute of each NODE (i=2267, ns=2;s=Tank) on the active
server. Text: one line per node, NODE  VALUE  TYPE  STATUS  SOURCE_TIMESTAMP.
Exits 1 when any status is not Good (after printing every node).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			nodes, err := parseNodes(args)
			if err != nil {
				return err
			}
			opts, err := g.options()
			if err != nil {
				return err
			}
			p := &printer{w: c.stdout, json: g.json}
			return withSession(cmd.Context(), opts, func(ctx context.Context, s session) error {
				return runRead(ctx, s, p, nodes)
			})
		},
	}
}

func runRead(ctx context.Context, s session, p *printer, nodes []*ua.NodeID) error {
	res, err := s.Read(ctx, nodes...)
	if err != nil {
		return err
	}
	if len(res) != len(nodes) {
		return fmt.Errorf("read %d nodes: the server returned %d results", len(nodes), len(res))
	}
	from := s.Active()
	bad := false
	for i, n := range nodes {
		if err := p.readResult(n, res[i], from); err != nil {
			return err
		}
		bad = bad || res[i] == nil || !isGood(res[i].Status)
	}
	if bad {
		return errNotGood
	}
	return nil
}

func (c *cli) clientWriteCmd(g *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "write NODE=VALUE[:type]...",
		Short: "Write the Value of nodes",
		Long: `Write VALUE to the Value attribute of NODE. NODE is the shortest prefix
before an '=' that is a NodeId, so ns=2;s=Tank=5 writes 5 to ns=2;s=Tank.
:type is one of ` + writeTypeList + `;
without it the node is read first and VALUE converted to the type of its
current value. Text: NODE  STATUS. Exits 1 when any status is not Good
(after printing every node), 2 when a value does not convert.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var writes []writeArg
			for _, a := range args {
				w, err := parseWriteArg(a)
				if err != nil {
					return usageErr("%v", err)
				}
				writes = append(writes, w)
			}
			opts, err := g.options()
			if err != nil {
				return err
			}
			p := &printer{w: c.stdout, json: g.json}
			return withSession(cmd.Context(), opts, func(ctx context.Context, s session) error {
				return runWrite(ctx, s, p, writes)
			})
		},
	}
}

// runWrite reads the current value of every untyped node to learn its
// type, converts, writes the rest and prints one status per argument. A
// node whose read is not Good is not written: its read status is printed.
func runWrite(ctx context.Context, s session, p *printer, writes []writeArg) error {
	status := make([]ua.StatusCode, len(writes))
	if err := typeUntyped(ctx, s, writes, status); err != nil {
		return err
	}
	var req []*ua.WriteValue
	var idx []int
	for i, w := range writes {
		if w.v == nil {
			continue
		}
		req = append(req, &ua.WriteValue{
			NodeID: w.node, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: w.v},
		})
		idx = append(idx, i)
	}
	if len(req) > 0 {
		res, err := s.Write(ctx, req...)
		if err != nil {
			return err
		}
		if len(res) != len(req) {
			return fmt.Errorf("write %d nodes: the server returned %d results", len(req), len(res))
		}
		for j, i := range idx {
			status[i] = res[j]
		}
	}
	from := s.Active()
	bad := false
	for i, w := range writes {
		if err := p.writeResult(w.node, status[i], from); err != nil {
			return err
		}
		bad = bad || !isGood(status[i])
	}
	if bad {
		return errNotGood
	}
	return nil
}

// typeUntyped reads the nodes of the writes without a :type and converts
// their values to the type of the current value. A node whose read is not
// Good gets that status in status[i] and no value.
func typeUntyped(ctx context.Context, s session, writes []writeArg, status []ua.StatusCode) error {
	var nodes []*ua.NodeID
	var idx []int
	for i, w := range writes {
		if !w.typed {
			nodes, idx = append(nodes, w.node), append(idx, i)
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	res, err := s.Read(ctx, nodes...)
	if err != nil {
		return fmt.Errorf("read the current values to learn their types: %w", err)
	}
	if len(res) != len(nodes) {
		return fmt.Errorf("read %d nodes: the server returned %d results", len(nodes), len(res))
	}
	for j, i := range idx {
		w := &writes[i]
		dv := res[j]
		switch {
		case dv == nil:
			status[i] = ua.StatusBad
			continue
		case !isGood(dv.Status):
			status[i] = dv.Status
			continue
		case dv.Value == nil || dv.Value.Type() == ua.TypeIDNull:
			return usageErr("write %s: the node has no value to take the type from; give VALUE:type (%s)", w.node, writeTypeList)
		case dv.Value.ArrayLength() > 0 || dv.Value.Has(ua.VariantArrayValues):
			return usageErr("write %s: the node holds an array of %s; writing arrays is not supported", w.node, typeName(dv.Value))
		}
		w.typ = dv.Value.Type()
		if suffixOf(w.typ) == "" {
			return usageErr("write %s: the node holds a %s; give VALUE:type (%s)", w.node, typeName(dv.Value), writeTypeList)
		}
		v, err := convertValue(w.value, w.typ)
		if err != nil {
			return &exitError{code: exitUsage, err: conversionError(w.node, w.value, w.typ, err)}
		}
		w.v = v
	}
	return nil
}

func (c *cli) clientBrowseCmd(g *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "browse [NODE]",
		Short: "List the references of a node (default i=85, Objects)",
		Long: `List every forward reference of NODE (default i=85, the Objects folder).
Text: REFERENCE_TYPE  NODEID  BROWSENAME  NODECLASS, one line per reference.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			node := ua.NewNumericNodeID(0, id.ObjectsFolder)
			if len(args) == 1 {
				n, err := parseNodeID(args[0])
				if err != nil {
					return usageErr("%v", err)
				}
				node = n
			}
			opts, err := g.options()
			if err != nil {
				return err
			}
			p := &printer{w: c.stdout, json: g.json}
			return withSession(cmd.Context(), opts, func(ctx context.Context, s session) error {
				refs, err := s.Browse(ctx, node)
				if err != nil {
					return err
				}
				for _, r := range refs {
					if err := p.reference(r); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

func (c *cli) clientRedundancyCmd(g *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "redundancy",
		Short: "Show the redundant set: RedundancySupport, ServerUriArray and every server's level",
		Long: `Read RedundancySupport, ServerArray and ServerUriArray of the active server
and print them with a table of every server of the set: URI, URL, LEVEL
(the last ServiceLevel seen, "-" when none), UP (a session is open and
publishing) and ACTIVE (the server the client uses).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := g.options()
			if err != nil {
				return err
			}
			p := &printer{w: c.stdout, json: g.json}
			return withSession(cmd.Context(), opts, func(ctx context.Context, s session) error {
				info, err := s.Redundancy(ctx)
				if err != nil {
					return err
				}
				return p.redundancy(info)
			})
		},
	}
}

// subscribeFlags are the flags of "client subscribe".
type subscribeFlags struct {
	interval, duration time.Duration
	count              int
	// sampling is --sampling-interval; samplingSet tells 0 (every change)
	// from not given (the publishing interval).
	sampling    time.Duration
	samplingSet bool
	mode        string
	dedupWindow time.Duration
	hotQueue    uint32
}

// apply checks the mode flags and puts them into opts.
func (sf *subscribeFlags) apply(opts *client.Options) error {
	mode, err := client.ParseMode(sf.mode)
	if err != nil || sf.mode == "" {
		return usageErr("--mode %q: accepted values are %s", sf.mode, client.ModeList())
	}
	if sf.dedupWindow <= 0 {
		return usageErr("--dedup-window %s: must be positive", sf.dedupWindow)
	}
	if sf.hotQueue == 0 {
		return usageErr("--hot-queue 0: must be 1 or more")
	}
	opts.Mode, opts.DedupWindow, opts.HotQueueSize = mode, sf.dedupWindow, sf.hotQueue
	return nil
}

func (c *cli) clientSubscribeCmd(g *clientFlags) *cobra.Command {
	sf := &subscribeFlags{}
	cmd := &cobra.Command{
		Use:   "subscribe NODE...",
		Short: "Print every data change of nodes and every change of server",
		Long: `Monitor the Value of each NODE and print one line per notification and one
per change of the active server (CONNECTED, FAILOVER with its failover
time, LOST), following the set across failovers. Runs until SIGINT or
SIGTERM (exit 0), --count notifications or --duration.

--mode says how the set is used (docs/client.md): warm (the subscriptions
move to the next server after a failover), hot-a (on every server,
Sampling on the backups, switched to Reporting at a failover), hot-b
(every server reports; the client drops the second copy of a value seen
within --dedup-window), mirrored (the same session is activated on the
next server and the messages not yet received are republished), or auto
(the default: chosen from the server's RedundancySupport and printed with
the CONNECTED line).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			nodes, err := parseNodes(args)
			if err != nil {
				return err
			}
			switch {
			case sf.interval <= 0:
				return usageErr("--interval %s: must be positive", sf.interval)
			case sf.count < 0:
				return usageErr("--count %d: must be 0 (no limit) or more", sf.count)
			case sf.duration < 0:
				return usageErr("--duration %s: must be 0 (no limit) or more", sf.duration)
			case sf.sampling < 0:
				return usageErr("--sampling-interval %s: must be 0 (every change) or more", sf.sampling)
			}
			sf.samplingSet = cmd.Flags().Changed("sampling-interval")
			opts, err := g.options()
			if err != nil {
				return err
			}
			if err := sf.apply(&opts); err != nil {
				return err
			}
			p := &printer{w: c.stdout, json: g.json}
			opts.OnEvent = func(e client.Event) { _ = p.event(e) }
			return withSession(cmd.Context(), opts, func(ctx context.Context, s session) error {
				return runSubscribe(ctx, s, p, nodes, *sf)
			})
		},
	}
	f := cmd.Flags()
	sf.interval = 500 * time.Millisecond
	f.Var(durationFlag{&sf.interval}, "interval", "publishing and sampling interval")
	f.IntVar(&sf.count, "count", 0, "stop after this many notifications (0: no limit)")
	f.Var(durationFlag{&sf.duration}, "duration", "stop after this long (0: no limit)")
	f.Var(durationFlag{&sf.sampling}, "sampling-interval", "sampling interval asked for each item (default: --interval; 0: every change)")
	f.StringVar(&sf.mode, "mode", string(client.ModeAuto), "how the redundant set is used: "+client.ModeList())
	sf.dedupWindow = client.DefaultDedupWindow
	f.Var(durationFlag{&sf.dedupWindow}, "dedup-window", "hot-a, hot-b: equal values of a node whose source timestamps are this close are one value")
	f.Uint32Var(&sf.hotQueue, "hot-queue", client.DefaultHotQueueSize, "hot-a, hot-b: queue size of each monitored item (what a backup buffers)")
	return cmd
}

// runSubscribe prints notifications until ctx ends (a signal), the count
// is reached or the duration has passed; each of these is a success.
func runSubscribe(ctx context.Context, s session, p *printer, nodes []*ua.NodeID, sf subscribeFlags) error {
	if sf.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sf.duration)
		defer cancel()
	}
	sampling := sf.interval
	if sf.samplingSet {
		sampling = sf.sampling
	}
	notes, err := s.Subscribe(ctx, nodes, sf.interval, sampling)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	for n := 0; sf.count == 0 || n < sf.count; n++ {
		select {
		case <-ctx.Done():
			return nil
		case note, ok := <-notes:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("the subscription ended")
			}
			if err := p.notification(note); err != nil {
				return err
			}
		}
	}
	return nil
}
