//! call-viewer: the call viewer, a web app served from files embedded in this binary
//! (`GET /app/…`). It reads calls through the public API with the credential the person
//! gives it in the page; this function reads nothing and holds no AWS permission.

mod site;

use lambda_http::{run, service_fn, Body, Error, Request, Response};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let site = site::Site::from_env();
    run(service_fn(|request: Request| {
        let response: Response<Body> = site.answer(&request);
        async move { Ok::<_, Error>(response) }
    }))
    .await
}
