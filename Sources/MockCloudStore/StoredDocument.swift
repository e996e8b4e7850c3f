/// Every stored document of a data directory, for the admin tool: settings
/// files and inbox messages, each with the folder, lock and place it has.
package struct StoredDocument: Sendable {
    package let folder: DocumentFolder
    package let name: String
    package let place: DocumentPlace

    package var path: String { folder.directory + "/" + name }
}
