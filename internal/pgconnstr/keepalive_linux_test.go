package pgconnstr

import (
	"context"
	"net"
	"syscall"
	"testing"
)

// TestKeepalivesOnSocket dials with the configured dialer and reads the
// socket's keep-alive options back.
func TestKeepalivesOnSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	opts := func(conn string) (on, idle, intvl, cnt int) {
		t.Helper()
		cfg, err := Parse(conn)
		if err != nil {
			t.Fatal(err)
		}
		c, err := cfg.DialFunc(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		_ = raw.Control(func(fd uintptr) {
			on, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
			idle, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
			intvl, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL)
			cnt, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT)
		})
		return
	}
	if on, idle, intvl, cnt := opts("host=a user=u keepalives_idle=31 keepalives_interval=7 keepalives_count=4"); on == 0 || idle != 31 || intvl != 7 || cnt != 4 {
		t.Errorf("keep-alive on=%d idle=%d interval=%d count=%d; want on, 31, 7, 4", on, idle, intvl, cnt)
	}
	if on, _, _, _ := opts("host=a user=u keepalives=0"); on != 0 {
		t.Errorf("keepalives=0: SO_KEEPALIVE is %d, want 0", on)
	}
}
