package benchsrv

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/addrspace"
)

// otopcuaServer is otopcua's own OPC UA server as a host runs it:
// opcua.New with default options (address space, subscription engine,
// service layer, Server object). Its ApplicationURI is NamespaceURI, so
// the benchmark's variables live in the server's own namespace 1.
type otopcuaServer struct {
	srv    *opcua.Server
	vars   []*addrspace.Variable
	rounds *addrspace.Variable
}

func newOtopcua(ctx context.Context, cfg Config) (Server, error) {
	host, port, err := splitAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		port = opcua.AnyPort
	}
	srv, err := opcua.New(opcua.Config{
		ListenHost:     host,
		Port:           port,
		PublicHostname: host,
		ApplicationURI: NamespaceURI,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return nil, fmt.Errorf("benchsrv: otopcua: %w", err)
	}
	o := &otopcuaServer{srv: srv}
	if err := o.build(cfg.Items); err != nil {
		srv.Close()
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		return nil, fmt.Errorf("benchsrv: otopcua: start: %w", err)
	}
	return o, nil
}

func (o *otopcuaServer) build(items int) error {
	as := o.srv.AddressSpace()
	ns := as.AddNamespace(NamespaceURI)
	if ns != Namespace {
		return fmt.Errorf("benchsrv: otopcua put %s at ns=%d, want %d", NamespaceURI, ns, Namespace)
	}
	folder := ua.NewNumericNodeID(ns, FolderID)
	if err := as.AddFolder(folder, "Bench", "", ua.NewNumericNodeID(0, id.ObjectsFolder)); err != nil {
		return err
	}
	read := byte(ua.AccessLevelTypeCurrentRead)
	var err error
	o.rounds, err = as.AddVariable(ua.NewNumericNodeID(ns, RoundsID), "Rounds", "", folder, ua.NewNumericNodeID(0, id.Int64), int64(0), read)
	if err != nil {
		return err
	}
	o.vars = make([]*addrspace.Variable, items)
	for k := range items {
		dt := ua.NewNumericNodeID(0, id.Int64)
		if k%2 == 1 {
			dt = ua.NewNumericNodeID(0, id.Double)
		}
		o.vars[k], err = as.AddVariable(ua.NewNumericNodeID(ns, uint32(FirstID+k)), fmt.Sprintf("V%06d", k), "", folder, dt, valueOf(k, 0), read)
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

func (o *otopcuaServer) Close() error { return o.srv.Close() }
