import Foundation

/// A group of consecutive rows of a live result that share the value of its section key path
/// (`NSFetchedResultsSectionInfo`): the rows at ``range`` of the snapshot's ids.
public struct LiveResultsSection: Sendable, Hashable {
    /// The rows' value of the section key path: nil when it is NULL (or a relationship on the way is); a to-one
    /// relationship's destination as its id, `@count` as an int.
    public let value: AttributeValue?
    /// The section's rows, as offsets in the snapshot's ``LiveResultsSnapshot/ids``.
    public let range: Range<Int>

    /// The value as text, the empty string for nil (`NSFetchedResultsSectionInfo.name`).
    public var name: String { value?.description ?? "" }

    /// How many rows the section has.
    public var count: Int { range.count }

    /// A section of the rows at `range` sharing `value`.
    package init(value: AttributeValue?, range: Range<Int>) {
        self.value = value
        self.range = range
    }
}
