package apply

import (
	"context"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// streamedTxns are the streamed transactions in hand (protocol 2+), each
// gathered from its chunks (Stream Start … Stream Stop) into a buffer of its
// own until its Stream Commit, Stream Prepare or Stream Abort.
type streamedTxns struct {
	inChunk bool   // between Stream Start and Stream Stop
	xid     uint32 // the transaction of the chunk
	bufs    map[uint32]*txnBuffer
}

// chunk is the buffer of the transaction whose chunk is open.
func (s *streamedTxns) chunk() *txnBuffer { return s.bufs[s.xid] }

// subxid is the (sub)transaction a message in a stream chunk belongs to.
func (s *streamedTxns) subxid(xid uint32) uint32 {
	if xid == 0 {
		return s.xid
	}
	return xid
}

func (a *Applier) streamStart(lsn source.LSN, m *source.StreamStart) error {
	if err := a.outside(lsn, "Stream Start"); err != nil {
		return err
	}
	buf := a.streams.bufs[m.Xid]
	switch {
	case m.FirstSegment && buf != nil:
		return protoErr(lsn, "Stream Start of a first segment for transaction %d, which already streamed", m.Xid)
	case !m.FirstSegment && buf == nil:
		return protoErr(lsn, "Stream Start for transaction %d without its first segment", m.Xid)
	case buf == nil:
		a.streams.bufs[m.Xid] = a.spool.newBuffer(m.Xid)
	}
	a.streams.inChunk, a.streams.xid = true, m.Xid
	return nil
}

func (a *Applier) streamStop(lsn source.LSN) error {
	if !a.streams.inChunk {
		return protoErr(lsn, "Stream Stop without Stream Start")
	}
	a.streams.inChunk = false
	return nil
}

func (a *Applier) streamCommit(ctx context.Context, lsn source.LSN, m *source.StreamCommit) error {
	if err := a.outside(lsn, "Stream Commit"); err != nil {
		return err
	}
	buf := a.streams.bufs[m.Xid]
	if buf == nil {
		return protoErr(lsn, "Stream Commit for transaction %d, which never streamed", m.Xid)
	}
	delete(a.streams.bufs, m.Xid)
	defer buf.release()
	if m.EndLSN <= a.skipBelow {
		// pgoutput takes the relations of a committed streamed transaction as
		// sent for the whole session: later transactions rely on them.
		return a.installRelations(ctx, buf)
	}
	a.applying = applying{lsn: m.CommitLSN, xid: m.Xid}
	return a.applyBuffered(ctx, buf, sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.CommitTime})
}

func (a *Applier) streamAbort(lsn source.LSN, m *source.StreamAbort) error {
	if err := a.outside(lsn, "Stream Abort"); err != nil {
		return err
	}
	buf := a.streams.bufs[m.Xid]
	if buf == nil {
		// Its changes never reached us (or it was dropped already): nothing to undo.
		a.log.Debug("stream abort of an unknown transaction", "xid", m.Xid, "subxid", m.SubXid, "lsn", lsn)
		return nil
	}
	if m.SubXid == m.Xid || m.SubXid == 0 {
		delete(a.streams.bufs, m.Xid)
		return buf.release()
	}
	buf.abortSub(m.SubXid)
	return nil
}
