// PowerLossTests: the store after power cuts injected below it (the CShoalPowerCut VFS).

import Testing

/// The power-cut VFS holds process-wide state, so these tests run one at a time.
@Suite(.serialized) struct PowerLossTests {}
