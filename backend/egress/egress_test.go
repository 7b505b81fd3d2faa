package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"code.dny.dev/ssrf"

	"github.com/adlink/adlink/internal/testnet"
)

// TestPublic: the metadata addresses of the clouds, loopback, private and
// the IPv6 forms that carry them are not public; an address on the
// public internet is, whatever its port.
func TestPublic(t *testing.T) {
	g := New()
	for _, a := range []string{
		"169.254.169.254", "fd00:ec2::254", "127.0.0.1", "::1", "10.0.0.1", "172.16.0.1", "192.168.0.1",
		"100.64.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "fe80::1", "0.0.0.0",
	} {
		if err := g.Public(netip.MustParseAddr(a)); !Refused(err) {
			t.Errorf("Public(%s) = %v, want a refusal", a, err)
		}
	}
	for _, a := range []string{"1.1.1.1", "2606:4700:4700::1111"} {
		if err := g.Public(netip.MustParseAddr(a)); err != nil {
			t.Errorf("Public(%s) = %v", a, err)
		}
	}
}

// TestDialJudgesEveryAddress: a name is dialled at each address it
// resolves to, each judged by the dialer's Control: a refused address
// is passed over for the next, and with none left the refusal is the
// error.
func TestDialJudgesEveryAddress(t *testing.T) {
	l := testnet.Listen(t, testnet.StandIn)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	d := &net.Dialer{Control: New(testnet.PublicStandIn()...).Control}
	both := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr(testnet.StandIn)}, nil
	}
	c, err := Dial(context.Background(), d, both, "tcp", net.JoinHostPort("shop.test", port))
	if err != nil {
		t.Fatalf("Dial with a refused and an allowed address: %v", err)
	}
	if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != testnet.StandIn {
		t.Errorf("connected to %s, want %s", got, testnet.StandIn)
	}
	c.Close()
	private := testnet.Resolver(map[string]string{"inner.test": "127.0.0.1"})
	if _, err := Dial(context.Background(), d, private, "tcp", net.JoinHostPort("inner.test", port)); !Refused(err) {
		t.Errorf("Dial of a private name = %v, want a refusal", err)
	}
	if _, err := Dial(context.Background(), d, private, "tcp", net.JoinHostPort("127.0.0.1", port)); !errors.Is(err, ssrf.ErrProhibitedIP) {
		t.Errorf("Dial of a private literal = %v, want a refusal", err)
	}
	var dnsErr *net.DNSError
	if _, err := Dial(context.Background(), d, private, "tcp", net.JoinHostPort("nowhere.test", port)); !errors.As(err, &dnsErr) {
		t.Errorf("Dial of an unknown name = %v, want a DNS error", err)
	}
}
