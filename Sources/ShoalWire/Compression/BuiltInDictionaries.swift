// BuiltInDictionaries: the zstd dictionaries every Shoal node holds, shipped as code.

/// The dictionaries that ship with Shoal, so any two nodes can use them without exchanging them.
public enum BuiltInDictionaries {
    /// ID of ``records``: `0x5348_0001` ("SH", 1).
    public static let recordsID: UInt32 = 0x5348_0001

    /// A 16 KiB dictionary trained on notes-app records (ShoalSamples' NotesCorpus, a seed other
    /// than the benchmark's). The same bytes are in `Spec/dictionaries/records-v1.zdict` for
    /// `zstd -d -D`. Regenerate with `SHOAL_TRAIN_DICTIONARY=1 swift test --filter DictionaryTraining`.
    public static let records: ZstdDictionary = {
        // The bytes are checked by the tests (ID, size, round trip); a failure here would mean the
        // literal in BuiltInDictionaries+Data.swift was edited by hand.
        guard let bytes = Base64URL.decode(recordsDictionaryBase64), let d = try? ZstdDictionary(bytes: bytes) else {
            return ZstdDictionary(unchecked: recordsID)
        }
        return d
    }()
}
