"""Storage behind one interface (``base.Store``); every backend passes the same contract suite."""
