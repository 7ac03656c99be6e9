package benchsrv

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// otopcuaServer is otopcua's own OPC UA server: the address space
// (opcua/addrspace), the subscription engine (opcua/subscription) and the
// service layer (opcua/uaserver), wired the way the opcua package wires
// them for a host.
type otopcuaServer struct {
	as     *addrspace.AddressSpace
	engine *subscription.Engine
	srv    *uaserver.Server
	vars   []*addrspace.Variable
	rounds *addrspace.Variable
}

func newOtopcua(ctx context.Context, cfg Config) (Server, error) {
	host, port, err := splitAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o := &otopcuaServer{as: addrspace.New(addrspace.Options{})}
	if err := o.build(cfg.Items); err != nil {
		return nil, err
	}
	o.engine = subscription.New(o.as.Source(), subscription.Options{Logger: log})
	o.srv, err = uaserver.New(uaserver.Config{
		ListenAddr:     fmt.Sprintf("%s:%d", host, port),
		EndpointURL:    fmt.Sprintf("opc.tcp://%s:%d", host, port),
		ApplicationURI: "urn:otopcua:bench:server",
		Logger:         log,
	}, o.as, o.engine)
	if err != nil {
		o.engine.Close()
		return nil, err
	}
	if err := o.srv.Start(ctx); err != nil {
		o.engine.Close()
		return nil, fmt.Errorf("benchsrv: otopcua: start: %w", err)
	}
	return o, nil
}

func (o *otopcuaServer) build(items int) error {
	ns := o.as.AddNamespace(NamespaceURI)
	if ns != Namespace {
		return fmt.Errorf("benchsrv: otopcua put %s at ns=%d, want %d", NamespaceURI, ns, Namespace)
	}
	folder := ua.NewNumericNodeID(ns, FolderID)
	if err := o.as.AddFolder(folder, "Bench", "", ua.NewNumericNodeID(0, id.ObjectsFolder)); err != nil {
		return err
	}
	read := byte(ua.AccessLevelTypeCurrentRead)
	var err error
	o.rounds, err = o.as.AddVariable(ua.NewNumericNodeID(ns, RoundsID), "Rounds", "", folder, ua.NewNumericNodeID(0, id.Int64), int64(0), read)
	if err != nil {
		return err
	}
	o.vars = make([]*addrspace.Variable, items)
	for k := range items {
		dt := ua.NewNumericNodeID(0, id.Int64)
		if k%2 == 1 {
			dt = ua.NewNumericNodeID(0, id.Double)
		}
		o.vars[k], err = o.as.AddVariable(ua.NewNumericNodeID(ns, uint32(FirstID+k)), fmt.Sprintf("V%06d", k), "", folder, dt, valueOf(k, 0), read)
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *otopcuaServer) URL() string { return o.srv.EndpointURL() }

// UpdateAll sets every variable through its handle, as a driver does.
func (o *otopcuaServer) UpdateAll(round int64) {
	for k, v := range o.vars {
		if err := v.Set(valueOf(k, round), ua.StatusOK, time.Now()); err != nil {
			panic("benchsrv: an int64 or float64 must make a Variant: " + err.Error())
		}
	}
	if err := o.rounds.Set(round, ua.StatusOK, time.Now()); err != nil {
		panic("benchsrv: an int64 must make a Variant: " + err.Error())
	}
}

func (o *otopcuaServer) Close() error {
	err := o.srv.Close()
	o.engine.Close()
	return err
}
