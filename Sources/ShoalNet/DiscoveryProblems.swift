// DiscoveryProblems: local discovery's failures now, so that each is logged when it begins, changes or ends.

/// The failures local discovery has now, each under the ``Subject`` that failed (a socket, a
/// join on an interface, a destination), so that a failure is logged when it begins, when its error
/// changes and when it ends — never once per attempt: while the network is down, the log stays
/// quiet however often discovery retries.
package struct DiscoveryProblems: Sendable {
    /// What one outcome changed, to be logged.
    package enum Change: Sendable, Equatable {
        /// It failed, and did not before: the error.
        case began(String)
        /// It fails with another error than before: the new one.
        case changed(String)
        /// It works again; the error it had.
        case ended(String)
    }

    /// What failed.
    package enum Subject: Hashable, Sendable {
        /// Opening the socket that receives a family's announcements (binding the port).
        case receiving(ipv6: Bool)
        /// Opening the socket that sends a family's announcements.
        case sending(ipv6: Bool)
        /// Joining a family's group on an interface.
        case joining(ipv6: Bool, interface: String)
        /// Sending the announcement to a destination out of an interface.
        case announcing(to: String, interface: String)

        /// The interface it concerns, if one.
        package var interface: String? {
            switch self {
            case .receiving, .sending: nil
            case .joining(_, let name), .announcing(_, let name): name
            }
        }
    }

    /// The current failures and their errors.
    package private(set) var current: [Subject: String] = [:]

    package init() {}

    /// Records the outcome of an attempt at `key` — `error` nil for a success — and says what
    /// changed, or nil when nothing did (the same failure again, or another success).
    package mutating func record(_ key: Subject, _ error: String?) -> Change? {
        let old = current[key]
        current[key] = error
        switch (old, error) {
        case (nil, nil): return nil
        case (let old?, nil): return .ended(old)
        case (nil, let new?): return .began(new)
        case (let old?, let new?): return old == new ? nil : .changed(new)
        }
    }

    /// Forgets, without logging, the failures on interfaces not in `interfaces` (gone, or down):
    /// each begins afresh if the interface comes back and fails again.
    package mutating func forget(interfacesOtherThan interfaces: Set<String>) {
        current = current.filter { $0.key.interface.map(interfaces.contains) ?? true }
    }
}
