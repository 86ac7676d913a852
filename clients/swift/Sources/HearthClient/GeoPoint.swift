import Foundation

/// A latitude/longitude pair (`{"$geopoint":[lat,lng]}` on the wire). The server refuses latitudes outside
/// [-90, 90] and longitudes outside [-180, 180].
public struct GeoPoint: Sendable, Hashable, Codable, CustomStringConvertible {
    public let latitude: Double
    public let longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    public var description: String { "GeoPoint(\(latitude), \(longitude))" }
}
