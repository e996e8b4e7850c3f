import MockCloudCore

CGIProgram.serve(name: "user-settings", bodyLimit: SettingsRoute.bodyLimit) { request in
    try SettingsRoute(dataRoot: ServiceConfig.dataRoot(request.environment)).respond(to: request)
}
