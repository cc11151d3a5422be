package source

// The Decoder reuses Insert, Update, Delete, Truncate and LogicalMessage and points
// their values into its input buffer (see Decoder). The Clone methods make deep
// copies that the caller owns and may keep.

// Clone returns a deep copy of t that shares no memory with t. Null and unchanged
// values keep a nil Data; an empty text or binary value keeps a non-nil empty Data.
// All values share one new byte array, so a clone costs two allocations.
func (t Tuple) Clone() Tuple {
	if t == nil {
		return nil
	}
	size := 0
	for _, v := range t {
		size += len(v.Data)
	}
	data := make([]byte, 0, size)
	out := make(Tuple, len(t))
	for i, v := range t {
		out[i].Kind = v.Kind
		if v.Data == nil {
			continue
		}
		start := len(data)
		data = append(data, v.Data...)
		// Cap each value at its end so that appending to one cannot overwrite the next.
		out[i].Data = data[start:len(data):len(data)]
	}
	return out
}

// Clone returns a deep copy of m owned by the caller.
func (m *Insert) Clone() *Insert {
	if m == nil {
		return nil
	}
	c := *m
	c.New = m.New.Clone()
	return &c
}

// Clone returns a deep copy of m owned by the caller.
func (m *Update) Clone() *Update {
	if m == nil {
		return nil
	}
	c := *m
	c.Old = m.Old.Clone()
	c.New = m.New.Clone()
	return &c
}

// Clone returns a deep copy of m owned by the caller.
func (m *Delete) Clone() *Delete {
	if m == nil {
		return nil
	}
	c := *m
	c.Old = m.Old.Clone()
	return &c
}

// Clone returns a deep copy of m owned by the caller.
func (m *Truncate) Clone() *Truncate {
	if m == nil {
		return nil
	}
	c := *m
	if m.RelationIDs != nil {
		c.RelationIDs = append(make([]uint32, 0, len(m.RelationIDs)), m.RelationIDs...)
	}
	return &c
}

// Clone returns a deep copy of m owned by the caller.
func (m *LogicalMessage) Clone() *LogicalMessage {
	if m == nil {
		return nil
	}
	c := *m
	if m.Content != nil {
		c.Content = append(make([]byte, 0, len(m.Content)), m.Content...)
	}
	return &c
}
