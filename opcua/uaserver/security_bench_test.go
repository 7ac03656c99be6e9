package uaserver

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"
)

var benchSecurity = []struct {
	name string
	e    EndpointSecurity
}{
	{"None", EndpointSecurity{ua.SecurityPolicyURINone, ua.MessageSecurityModeNone}},
	{"Basic256Sha256_SignAndEncrypt", EndpointSecurity{ua.SecurityPolicyURIBasic256Sha256, ua.MessageSecurityModeSignAndEncrypt}},
}

// benchClient connects gopcua's client to srv with e.
func benchClient(b *testing.B, srv *Server, ep *ua.EndpointDescription) *opcua.Client {
	c, err := opcua.NewClient("opc.tcp://"+srv.Addr().String(),
		opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeAnonymous),
		opcua.Certificate(cliCert), opcua.PrivateKey(cliKey), opcua.ApplicationURI(clientURI),
		opcua.AutoReconnect(false), opcua.RequestTimeout(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Connect(context.Background()); err != nil {
		b.Fatal(err)
	}
	return c
}

func benchEndpoint(b *testing.B, srv *Server, e EndpointSecurity) *ua.EndpointDescription {
	eps, err := opcua.GetEndpoints(context.Background(), "opc.tcp://"+srv.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range eps {
		if d.SecurityPolicyURI == e.PolicyURI && d.SecurityMode == e.Mode {
			return d
		}
	}
	b.Fatal("endpoint not offered")
	return nil
}

// BenchmarkHandshake: OpenSecureChannel, CreateSession and ActivateSession
// (then CloseSession) by gopcua's client, one after the other.
func BenchmarkHandshake(b *testing.B) {
	testKeys(b)
	for _, bc := range benchSecurity {
		b.Run(bc.name, func(b *testing.B) {
			srv := benchServer(b, bc.e)
			ep := benchEndpoint(b, srv, bc.e)
			start := time.Now()
			for b.Loop() {
				c := benchClient(b, srv, ep)
				_ = c.Close(context.Background())
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "handshakes/s")
		})
	}
}

// BenchmarkNotifications10k: one subscription of 10,000 items, each
// changing every 20 ms, published every 100 ms; the rate is of item
// notifications received by the client.
func BenchmarkNotifications10k(b *testing.B) {
	testKeys(b)
	const items = 10000
	for _, bc := range benchSecurity {
		b.Run(bc.name, func(b *testing.B) {
			srv := benchServer(b, bc.e)
			c := benchClient(b, srv, benchEndpoint(b, srv, bc.e))
			defer func() { _ = c.Close(context.Background()) }()
			ctx := context.Background()
			notes := make(chan *opcua.PublishNotificationData, 256)
			sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 100 * time.Millisecond}, notes)
			if err != nil {
				b.Fatal(err)
			}
			reqs := make([]*ua.MonitoredItemCreateRequest, items)
			for i := range reqs {
				reqs[i] = opcua.NewMonitoredItemCreateRequestWithDefaults(nodeTemp, ua.AttributeIDValue, uint32(i))
				reqs[i].RequestedParameters.QueueSize = 1
			}
			if _, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, reqs...); err != nil {
				b.Fatal(err)
			}
			count := func() int {
				dc, ok := (<-notes).Value.(*ua.DataChangeNotification)
				if !ok {
					return 0
				}
				return len(dc.MonitoredItems)
			}
			for range 5 { // warm up: the initial values
				count()
			}
			n := 0
			start := time.Now()
			for b.Loop() {
				n += count()
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "notifications/s")
		})
	}
}

// benchServer serves e over the real engine with tickSource.
func benchServer(b *testing.B, e EndpointSecurity) *Server {
	var cfg Config
	secure(e)(&cfg)
	cfg.MaxSessions = 10000
	cfg.MaxUnactivatedSessions = 10000
	cfg.MaxUnactivatedSessionsPerAddress = 10000
	cfg.MaxSessionsPerAddress = 10000
	cfg.MaxConnectionsPerAddress = 10000
	cfg.MaxConnections = 10000
	return startBenchEngineServer(b, cfg)
}

func startBenchEngineServer(b *testing.B, cfg Config) *Server {
	srv, _ := startEngineServer(b, &tickSource{}, cfg)
	return srv
}
