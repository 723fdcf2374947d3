"""Small helpers every layer may use: errors, atomic writes, bounded reads, deadlines, shell
quoting, input patterns, version parsing. They import nothing else of the tool."""
