package apply

import (
	"context"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// subxid is the (sub)transaction a message in a stream chunk belongs to.
func (a *Applier) subxid(xid uint32) uint32 {
	if xid == 0 {
		return a.streamXid
	}
	return xid
}

func (a *Applier) streamStart(lsn source.LSN, m *source.StreamStart) error {
	if err := a.outside(lsn, "Stream Start"); err != nil {
		return err
	}
	buf := a.streams[m.Xid]
	switch {
	case m.FirstSegment && buf != nil:
		return protoErr(lsn, "Stream Start of a first segment for transaction %d, which already streamed", m.Xid)
	case !m.FirstSegment && buf == nil:
		return protoErr(lsn, "Stream Start for transaction %d without its first segment", m.Xid)
	case buf == nil:
		a.streams[m.Xid] = a.spool.newBuffer(m.Xid)
	}
	a.streaming, a.streamXid = true, m.Xid
	return nil
}

func (a *Applier) streamCommit(ctx context.Context, lsn source.LSN, m *source.StreamCommit) error {
	if err := a.outside(lsn, "Stream Commit"); err != nil {
		return err
	}
	buf := a.streams[m.Xid]
	if buf == nil {
		return protoErr(lsn, "Stream Commit for transaction %d, which never streamed", m.Xid)
	}
	delete(a.streams, m.Xid)
	defer buf.release()
	if m.EndLSN <= a.skipBelow {
		// pgoutput takes the relations of a committed streamed transaction as
		// sent for the whole session: later transactions rely on them.
		return a.installRelations(ctx, buf)
	}
	a.txnLSN, a.txnXid = m.CommitLSN, m.Xid
	a.txnPreparedXid = 0
	return a.applyBuffered(ctx, buf, sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.CommitTime})
}

func (a *Applier) streamAbort(lsn source.LSN, m *source.StreamAbort) error {
	if err := a.outside(lsn, "Stream Abort"); err != nil {
		return err
	}
	buf := a.streams[m.Xid]
	if buf == nil {
		// Its changes never reached us (or it was dropped already): nothing to undo.
		a.log.Debug("stream abort of an unknown transaction", "xid", m.Xid, "subxid", m.SubXid, "lsn", lsn)
		return nil
	}
	if m.SubXid == m.Xid || m.SubXid == 0 {
		delete(a.streams, m.Xid)
		return buf.release()
	}
	buf.abortSub(m.SubXid)
	return nil
}
