import MockCloudWire

// The wire types an app names, and only those: MockCloudClient's own names
// for MockCloudWire's types (the same types, so the server and the client
// still cannot disagree about them). An app imports MockCloudClient alone;
// the wire module is not re-exported, so what the server alone uses
// (query parameters, limits, failed-write and 410 reasons, its errors) is
// not part of the app's API. docs/ARCHITECTURE.md says why a list and not
// the module; Tests/api-break/run.sh checks these types' members too.

/// Who the user is (`X-User-Key`).
public typealias UserKey = MockCloudWire.UserKey
/// Which device wrote (`X-Device-Id`, an envelope's `source`).
public typealias DeviceID = MockCloudWire.DeviceID
/// A message's id (a HealthKit sample's sync identifier).
public typealias MessageID = MockCloudWire.MessageID
/// Where a reader of the feed is.
public typealias Anchor = MockCloudWire.Anchor
/// A JSON object as the server stores it: a message's body, a settings document.
public typealias JSONText = MockCloudWire.JSONText
/// A stored message as the feed and a 409 hand it out.
public typealias Envelope = MockCloudWire.Envelope
/// One page of the feed.
public typealias FeedPage = MockCloudWire.FeedPage
/// A deletion in a feed page.
public typealias Deletion = MockCloudWire.Deletion
