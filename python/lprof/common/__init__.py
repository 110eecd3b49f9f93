"""What every stage shares: errors, file writing, where library code lives,
which process this is, and lprof's own threads. Imports nothing else of lprof."""
