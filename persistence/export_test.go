package persistence

// CrashForTest ends the store as a killed process would: its redo log is
// left as it is, and unlocked, for the next store on the folder to recover.
func (s *FileStore) CrashForTest() {
	s.mu.Lock()
	s.closed = true
	l := s.redo
	s.mu.Unlock()
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// UnsyncedForTest returns the files the store wrote that no fsync or syncfs
// has covered yet: what a machine crash may tear or lose.
func (s *FileStore) UnsyncedForTest() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, d := range s.dirty {
		out = append(out, d.files...)
	}
	return dedupe(out)
}
