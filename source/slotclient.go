package source

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// SlotClient is the client a walsender streams a slot to, as
// pg_stat_replication shows it: what a person needs to find the program
// (another pgrelay, say) and stop it, where the walsender's pid says little.
type SlotClient struct {
	PID             int    // the walsender's
	Visible         bool   // pg_stat_replication shows the client to this role
	User            string // the role it logged in as
	ApplicationName string
	Addr            string // the client's address; "" over a Unix socket
	Port            int    // the client's port
	Since           time.Time
}

// ReadSlotClient reads what pg_stat_replication shows of the client of the
// walsender pid. Without the pg_read_all_stats role, another role's client
// is not shown: Visible is false.
func ReadSlotClient(ctx context.Context, conn *pgx.Conn, pid int) (SlotClient, error) {
	c := SlotClient{PID: pid}
	var user, app *string
	var addr *netip.Prefix
	var port *int32
	var since *time.Time
	err := conn.QueryRow(ctx, `SELECT usename::text, application_name, client_addr, client_port, backend_start
		FROM pg_catalog.pg_stat_replication WHERE pid = $1`, pid).Scan(&user, &app, &addr, &port, &since)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("source: read the client of walsender %d: %w", pid, err)
	}
	c.Visible = since != nil
	if user != nil {
		c.User = *user
	}
	if app != nil {
		c.ApplicationName = *app
	}
	if addr != nil {
		c.Addr = addr.Addr().String()
	}
	if port != nil {
		c.Port = int(*port)
	}
	if since != nil {
		c.Since = since.UTC()
	}
	return c, nil
}

// String describes the client in a few words, for a message (the
// walsender's pid aside).
func (c SlotClient) String() string {
	if !c.Visible {
		return "a client this role may not see: a superuser, or a role with pg_read_all_stats, sees it in pg_stat_replication"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "application_name %q, user %q, ", c.ApplicationName, c.User)
	switch {
	case c.Addr != "" && c.Port > 0:
		fmt.Fprintf(&b, "from %s port %d", c.Addr, c.Port)
	case c.Addr != "":
		fmt.Fprintf(&b, "from %s", c.Addr)
	default:
		b.WriteString("over a Unix socket on the source's host")
	}
	fmt.Fprintf(&b, ", connected since %s", c.Since.Format(time.RFC3339))
	return b.String()
}

// FindHint says how to find the client's process on its host.
func (c SlotClient) FindHint() string {
	switch {
	case !c.Visible:
		return "look up the client of that pid in pg_stat_replication as a superuser"
	case c.Addr != "" && c.Port > 0:
		return fmt.Sprintf("on the host at %s, the process owning local port %d (ss -tnp | grep ':%d ') is it", c.Addr, c.Port, c.Port)
	default:
		return "on the source's host, the process connected to the server's socket is it (ps, lsof)"
	}
}
