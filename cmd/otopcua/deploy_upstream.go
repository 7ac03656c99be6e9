package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/drivers/opcua"
)

// defaultUpstreamTimeout bounds asking every opcua device's upstream.
const defaultUpstreamTimeout = 5 * time.Second

// maxUpstreamsAsked is how many upstreams deploy asks at once.
const maxUpstreamsAsked = 8

// upstreamAnswer is what asking one opcua device's upstream gave: one
// entry per tag, or why there is none (notAsked, err).
type upstreamAnswer struct {
	tags     []opcua.UpstreamTag
	notAsked string // not asked, and why ("--no-upstream", a securityPolicy)
	err      error  // asked, and it did not answer
	quiet    bool   // no warning for the typed tags (--no-upstream: the operator chose it)
}

// askUpstream asks one device's upstream about its tags; it is
// opcua.UpstreamTypes in the command, a fake in tests.
type askUpstream func(ctx context.Context, dev deployment.Device) ([]opcua.UpstreamTag, error)

// askUpstreams asks the upstream of every opcua device of doc, at most
// maxUpstreamsAsked at once, one connection each, all within ctx. A
// device with a securityPolicy other than None is not asked (the deploy
// command holds no node's certificate): its nodes check it at connect.
func askUpstreams(ctx context.Context, doc *deployment.Document, ask askUpstream) map[int]upstreamAnswer {
	out := map[int]upstreamAnswer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxUpstreamsAsked)
	for i, dev := range doc.Devices {
		if dev.Driver != deployment.DriverOPCUA {
			continue
		}
		if p := dev.EffectiveSecurityPolicy(); p != deployment.PolicyNone {
			out[i] = upstreamAnswer{notAsked: "is not asked by deploy (securityPolicy " + p + ": deploy asks only upstreams of securityPolicy None; the nodes check these tags at connect)"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				mu.Lock()
				out[i] = upstreamAnswer{err: ctx.Err()}
				mu.Unlock()
				return
			}
			tags, err := ask(ctx, dev)
			if err == nil && len(tags) != len(dev.Tags) {
				err = fmt.Errorf("invariant broken: %d answers for %d tags", len(tags), len(dev.Tags))
			}
			mu.Lock()
			out[i] = upstreamAnswer{tags: tags, err: err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// noUpstream is the answers of --no-upstream: no opcua device asked.
func noUpstream(doc *deployment.Document) map[int]upstreamAnswer {
	out := map[int]upstreamAnswer{}
	for i, dev := range doc.Devices {
		if dev.Driver == deployment.DriverOPCUA {
			out[i] = upstreamAnswer{notAsked: "is not asked (--no-upstream)", quiet: true}
		}
	}
	return out
}

// upstreamVerdict is what the upstreams' answers make of a document.
type upstreamVerdict struct {
	types    map[deployment.TagAt]string // tags without a type: the upstream's
	from     map[deployment.TagAt]string // their upstream DataType, for the report
	problems []deployment.Problem
	warnings []string
}

// judgeUpstream compares every opcua tag of doc with its upstream's answer
// (answers by device index):
//
//   - a tag that does not resolve: a problem at its nodeId or browsePath;
//   - a node that is an array (ValueRank ≥ 0): a problem at the same path;
//   - a DataType no tag type holds (String, a structure): a problem at
//     its type;
//   - a type that differs from the upstream's: a problem at its type
//     naming the upstream's DataType and the accepted type;
//   - no type: the upstream's is taken (types);
//   - an upstream not asked or not answering: a tag without a type is a
//     problem; a device whose tags all have one gets a warning (its nodes
//     check them at connect).
func judgeUpstream(doc *deployment.Document, answers map[int]upstreamAnswer) upstreamVerdict {
	v := upstreamVerdict{types: map[deployment.TagAt]string{}, from: map[deployment.TagAt]string{}}
	for i, dev := range doc.Devices {
		a, ok := answers[i]
		if dev.Driver != deployment.DriverOPCUA || !ok {
			continue
		}
		urls := strings.Join(dev.EndpointURLs(), ", ")
		if a.notAsked != "" || a.err != nil {
			why, hint := a.notAsked, ""
			if a.err != nil {
				why, hint = "did not answer ("+a.err.Error()+")", ", or deploy when the upstream answers"
			}
			typed := 0
			for j, t := range dev.Tags {
				if t.Type != "" {
					typed++
					continue
				}
				v.problems = append(v.problems, deployment.Problem{
					Path:     deployment.TagAt{Device: i, Tag: j}.Path() + ".type",
					Accepted: "type not given and the upstream " + urls + " " + why + ": give the type" + hint,
				})
			}
			if typed > 0 && !a.quiet {
				v.warnings = append(v.warnings, fmt.Sprintf("devices[%d] %q: the upstream %s %s: %s with a type deployed unchecked; each node checks them at connect",
					i, dev.Name, urls, why, plural(typed, "tag")))
			}
			continue
		}
		for j, t := range dev.Tags {
			v.judgeTag(deployment.TagAt{Device: i, Tag: j}, t, a.tags[j])
		}
	}
	return v
}

// judgeTag is judgeUpstream for one tag the upstream answered about.
func (v *upstreamVerdict) judgeTag(at deployment.TagAt, t deployment.Tag, u opcua.UpstreamTag) {
	where, loc := at.Path()+".nodeId", t.NodeId
	if t.BrowsePath != "" {
		where, loc = at.Path()+".browsePath", t.BrowsePath
	}
	switch {
	case u.Problem != nil:
		v.problems = append(v.problems, deployment.Problem{Path: where, Value: jsonText(loc),
			Accepted: "accepted values are nodes the upstream resolves; " + u.Problem.Why})
	case u.ValueRank >= 0:
		v.problems = append(v.problems, deployment.Problem{Path: where, Value: jsonText(loc),
			Accepted: fmt.Sprintf("accepted values are scalar Variables; the upstream's node %s has ValueRank %d (an array)", u.Node, u.ValueRank)})
	case u.Type == "":
		v.problems = append(v.problems, deployment.Problem{Path: at.Path() + ".type", Value: jsonText(t.Type),
			Accepted: fmt.Sprintf("the upstream's DataType is %s, which no tag type holds: accepted are nodes of DataType %s", u.DataType, mappedDataTypes)})
	case t.Type == "":
		v.types[at], v.from[at] = u.Type, u.DataType
	case t.Type != u.Type:
		v.problems = append(v.problems, deployment.Problem{Path: at.Path() + ".type", Value: jsonText(t.Type),
			Accepted: fmt.Sprintf("the upstream's DataType is %s: accepted values are %s", u.DataType, u.Type)})
	}
}

// mappedDataTypes are the upstream DataTypes a tag type holds.
const mappedDataTypes = "Boolean, Int16, UInt16, Int32, UInt32, Float, Double"

// jsonText is s as a JSON string, as a problem shows a value ("" stays
// "": missing).
func jsonText(s string) string {
	if s == "" {
		return ""
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// askWithDriver is how the deploy command asks an upstream: the opcua
// driver's own connection settings, the operator's environment for
// passwordEnv, no node identity (so securityPolicy None only), no logs
// (what matters is in the answer).
func (c *cli) askWithDriver() askUpstream {
	getenv := func(key string) string {
		v := ""
		for _, kv := range c.environ {
			if k, val, ok := strings.Cut(kv, "="); ok && k == key {
				v = val
			}
		}
		return v
	}
	return func(ctx context.Context, dev deployment.Device) ([]opcua.UpstreamTag, error) {
		return opcua.UpstreamTypes(ctx, dev, drivers.Options{Getenv: getenv, Logger: slog.New(slog.DiscardHandler)})
	}
}

// upstreamFlags are deploy's flags for asking the upstreams.
type upstreamFlags struct {
	timeout time.Duration // --upstream-timeout
	skip    bool          // --no-upstream
}

// withUpstream checks doc (decoded from data by DecodeTypeless) against
// the upstreams of its opcua devices and returns the document to store:
// data with the upstream's type written into every tag that had none,
// decoded again with Decode. Warnings go to stderr, the types taken to
// stdout; problems are an exit 2 as for any invalid document.
func (c *cli) withUpstream(parent context.Context, file string, doc *deployment.Document, data []byte, f upstreamFlags) (*deployment.Document, []byte, error) {
	hasOPCUA := false
	for _, d := range doc.Devices {
		hasOPCUA = hasOPCUA || d.Driver == deployment.DriverOPCUA
	}
	if !hasOPCUA {
		return doc, data, nil
	}
	var answers map[int]upstreamAnswer
	if f.skip {
		answers = noUpstream(doc)
	} else {
		ctx, cancel := context.WithTimeout(parent, f.timeout)
		answers = askUpstreams(ctx, doc, c.askWithDriver())
		cancel()
	}
	v := judgeUpstream(doc, answers)
	if len(v.problems) > 0 {
		return nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("invalid deployment document in %s: %s", file, problemLines(v.problems))}
	}
	for _, w := range v.warnings {
		fmt.Fprintf(c.stderr, "warning: %s: %s\n", file, w)
	}
	if len(v.types) == 0 {
		return doc, data, nil
	}
	filled, err := deployment.WithTypes(data, v.types)
	if err == nil {
		doc, err = deployment.Decode(filled)
	}
	if err != nil {
		return nil, nil, &exitError{code: exitUsage, err: fmt.Errorf("deploy: %s with the upstream's types: %w", file, err)}
	}
	for i, d := range doc.Devices {
		for j, t := range d.Tags {
			if from, ok := v.from[deployment.TagAt{Device: i, Tag: j}]; ok {
				fmt.Fprintf(c.stdout, "%s: devices[%d].tags[%d] %s/%s: type %s (the upstream's DataType %s)\n", file, i, j, d.Name, t.Name, t.Type, from)
			}
		}
	}
	return doc, filled, nil
}
