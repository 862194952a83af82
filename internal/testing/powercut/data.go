package powercut

// fileErrLocked is the refusal of a data operation on n at offset or
// size at: the power is off, n is a directory, or at is negative.
func (d *Disk) fileErrLocked(n *Node, at int64) error {
	switch {
	case d.off:
		return errOff
	case n.dir:
		return errIsDir
	case at < 0:
		return errInval
	}
	return nil
}

// ReadAt reads n's current data at off into buf and returns how many bytes
// it read (short at the end of the file).
func (d *Disk) ReadAt(n *Node, buf []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fileErrLocked(n, off); err != nil {
		return 0, err
	}
	if off >= n.cur.size {
		return 0, nil
	}
	end := min(off+int64(len(buf)), n.cur.size)
	for pos := off; pos < end; {
		i, in := pos/PageSize, pos%PageSize
		m := min(PageSize-in, end-pos)
		dst := buf[pos-off : pos-off+m]
		if p, ok := n.cur.p[i]; ok {
			copy(dst, p[in:in+m])
		} else {
			clear(dst)
		}
		pos += m
	}
	return int(end - off), nil
}

// WriteAt writes data into n at off, growing it if needed. The change is
// visible at once and durable only after Sync.
func (d *Disk) WriteAt(n *Node, data []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fileErrLocked(n, off); err != nil {
		return 0, err
	}
	d.stats.Writes++
	if d.armAt != 0 && d.stats.Writes >= d.armAt {
		d.powerOffLocked()
		return 0, errOff
	}
	end := off + int64(len(data))
	for pos := off; pos < end; {
		i, in := pos/PageSize, pos%PageSize
		m := min(PageSize-in, end-pos)
		p, ok := n.cur.p[i]
		if !ok {
			p = make([]byte, PageSize)
			n.cur.p[i] = p
		}
		copy(p[in:in+m], data[pos-off:pos-off+m])
		n.dirty[i] = true
		pos += m
	}
	n.cur.size = max(n.cur.size, end)
	return len(data), nil
}

// Truncate sets n's size: bytes past it are gone, and growing reads as
// zeros. Durable only after Sync.
func (d *Disk) Truncate(n *Node, size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fileErrLocked(n, size); err != nil {
		return err
	}
	last := (size + PageSize - 1) / PageSize // first page wholly past size
	for i := range n.cur.p {
		if i >= last {
			delete(n.cur.p, i)
			n.dirty[i] = true
		}
	}
	if in := size % PageSize; in != 0 {
		if p, ok := n.cur.p[size/PageSize]; ok {
			clear(p[in:])
			n.dirty[size/PageSize] = true
		}
	}
	n.cur.size = size
	return nil
}
