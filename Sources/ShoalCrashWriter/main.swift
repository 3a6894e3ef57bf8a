// shoal-crash-writer: placeholder until the crash test lands.
print("shoal-crash-writer")
