package benchsrv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/server"
	"github.com/gopcua/opcua/ua"
)

// gopcuaServer is gopcua v0.9.0's own server package, used as shipped: its
// node namespace, its monitored-item service and its subscription loop.
type gopcuaServer struct {
	srv    *server.Server
	ns     *server.NodeNameSpace
	url    string
	vars   []*server.Node
	ids    []*ua.NodeID
	rounds *server.Node
}

func newGopcua(ctx context.Context, cfg Config) (Server, error) {
	host, port, err := splitAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	// gopcua logs through the standard logger; keep stdout clean.
	log.SetOutput(io.Discard)
	var srv *server.Server
	for attempt := 0; ; attempt++ {
		p := port
		if p == 0 {
			if p, err = freePort(host); err != nil {
				return nil, fmt.Errorf("benchsrv: gopcua: pick a port: %w", err)
			}
		}
		srv = server.New(
			server.EnableSecurity("None", ua.MessageSecurityModeNone),
			server.EnableAuthMode(ua.UserTokenTypeAnonymous),
			server.EndPoint(host, p),
		)
		if err = srv.Start(ctx); err == nil {
			break
		}
		if port != 0 || attempt == 4 {
			return nil, fmt.Errorf("benchsrv: gopcua: start on %s:%d: %w", host, p, err)
		}
	}
	g := &gopcuaServer{srv: srv, url: srv.URLs()[0]}
	if err := g.build(cfg.Items); err != nil {
		srv.Close()
		return nil, err
	}
	return g, nil
}

func (g *gopcuaServer) build(items int) error {
	g.ns = server.NewNodeNameSpace(g.srv, NamespaceURI)
	if g.ns.ID() != Namespace {
		return fmt.Errorf("benchsrv: gopcua put %s at ns=%d, want %d", NamespaceURI, g.ns.ID(), Namespace)
	}
	root, err := g.srv.Namespace(0)
	if err != nil {
		return err
	}
	objects := root.Objects()
	if objects == nil {
		return errors.New("benchsrv: gopcua has no Objects folder")
	}
	folder := server.NewFolderNode(ua.NewNumericNodeID(Namespace, FolderID), "Bench")
	g.ns.AddNode(folder)
	objects.AddRef(folder, id.HasComponent, true)

	g.rounds = server.NewVariableNode(ua.NewNumericNodeID(Namespace, RoundsID), "Rounds", int64(0))
	g.ns.AddNode(g.rounds)
	folder.AddRef(g.rounds, id.HasComponent, true)

	g.vars = make([]*server.Node, items)
	g.ids = make([]*ua.NodeID, items)
	now := time.Now()
	for k := range items {
		nid := ua.NewNumericNodeID(Namespace, uint32(FirstID+k))
		n := server.NewVariableNode(nid, fmt.Sprintf("V%06d", k), valueOf(k, 0))
		n.SetAttribute(ua.AttributeIDValue, dataValue(valueOf(k, 0), now))
		g.ns.AddNode(n)
		folder.AddRef(n, id.HasComponent, true)
		g.vars[k] = n
		g.ids[k] = nid
	}
	return nil
}

func dataValue(v any, source time.Time) *ua.DataValue {
	return &ua.DataValue{
		EncodingMask:    ua.DataValueValue | ua.DataValueSourceTimestamp | ua.DataValueServerTimestamp,
		Value:           ua.MustVariant(v),
		SourceTimestamp: source,
		ServerTimestamp: source,
	}
}

func (g *gopcuaServer) URL() string { return g.url }

// UpdateAll follows gopcua's own example: SetAttribute on the node, then
// ChangeNotification for its id. ChangeNotification blocks while the
// subscription's 100-slot queue is full, so this loop is throttled by the
// subscription goroutine.
func (g *gopcuaServer) UpdateAll(round int64) {
	for k, n := range g.vars {
		n.SetAttribute(ua.AttributeIDValue, dataValue(valueOf(k, round), time.Now()))
		g.ns.ChangeNotification(g.ids[k])
	}
	g.rounds.SetAttribute(ua.AttributeIDValue, dataValue(round, time.Now()))
}

func (g *gopcuaServer) Close() error { return g.srv.Close() }
