/* The Qt adapter's network part (qt_adapter.h): every request of a
 * QNetworkAccessManager of the main thread (QML's XMLHttpRequest is one),
 * as api_start / api_end for the pages and as a `net` record. Links
 * QtNetwork; loaded by the core when it first resolves a reply.
 *
 * Start: the reply's construction (inside get(), post(), …), the time the
 * core kept. End: its finished() signal, or readChannelFinished() just
 * before it (connected when the class became known, so after the
 * application's own slots, which may disconnect everything). Phases Qt tells: the
 * response headers (metaDataChanged: the first byte); with Qt 6.3 and
 * later, a new connection's connecting (socketStartedConnecting) up to the
 * request sent (requestSent): connect and TLS together. Qt counts no
 * header bytes: bytes received is the body (Content-Length, else what
 * downloadProgress counted), bytes sent the body uploaded; null when Qt
 * said nothing.
 */
#include "qt_adapter.h"

#include <QtNetwork/QNetworkReply>
#include <QtNetwork/QNetworkRequest>

#include <string>

namespace pacer_qt {
namespace {

struct Request {
    std::string url, method;
    int64_t start, headers = -1, connecting = -1, sent = -1;
    int64_t received = -1, uploaded = -1;
    bool ended = false;
};

std::string method_of(QNetworkReply *r)
{
    switch (r->operation()) {
    case QNetworkAccessManager::HeadOperation:
        return "HEAD";
    case QNetworkAccessManager::GetOperation:
        return "GET";
    case QNetworkAccessManager::PutOperation:
        return "PUT";
    case QNetworkAccessManager::PostOperation:
        return "POST";
    case QNetworkAccessManager::DeleteOperation:
        return "DELETE";
    default: {
        QByteArray verb = r->request().attribute(QNetworkRequest::CustomVerbAttribute).toByteArray();
        return verb.isEmpty() ? std::string("GET") : verb.toStdString();
    }
    }
}

void ended(QNetworkReply *r, Request *q)
{
    if (q->ended)
        return;
    q->ended = true;
    int64_t t = host().now_ns();
    int status = r->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    bool failed = r->error() != QNetworkReply::NoError;
    std::string error = failed ? r->errorString().toStdString() : std::string();
    std::string type = r->header(QNetworkRequest::ContentTypeHeader).toString().toStdString();
    QVariant length = r->header(QNetworkRequest::ContentLengthHeader);
    int64_t body = length.isValid() ? length.toLongLong() : q->received;

    host().request_end(q->url.c_str(), r, status, t);
    pacer_qt_request rec{};
    rec.method = q->method.c_str();
    rec.url = q->url.c_str();
    rec.status = status;
    rec.bytes_sent = q->uploaded;
    rec.bytes_received = body;
    rec.body_received = body;
    rec.content_type = type.empty() ? nullptr : type.c_str();
    rec.connect_ns = q->connecting >= 0 && q->sent >= q->connecting ? q->sent - q->connecting
                     : q->sent >= 0                                 ? 0
                                                                     : -1;
    rec.first_byte_ns = q->headers >= 0 ? q->headers - q->start : -1;
    rec.total_ns = t - q->start;
    rec.error = failed ? error.c_str() : nullptr;
    rec.end_ns = t;
    host().request_record(&rec);
}

void resolve(QObject *obj, int64_t t)
{
    QNetworkReply *r = static_cast<QNetworkReply *>(obj);
    Request *q = new Request;
    q->url = r->request().url().toString(QUrl::FullyEncoded).toStdString();
    q->method = method_of(r);
    q->start = t;
    QObject::connect(r, &QObject::destroyed, [q]() { delete q; });
    host().request_start(q->url.c_str(), r, t);
    QObject::connect(r, &QNetworkReply::metaDataChanged, r, [q]() {
        if (q->headers < 0)
            q->headers = host().now_ns();
    });
    QObject::connect(r, &QNetworkReply::downloadProgress, r,
                     [q](qint64 got, qint64) { q->received = got > q->received ? got : q->received; });
    QObject::connect(r, &QNetworkReply::uploadProgress, r,
                     [q](qint64 sent, qint64) { q->uploaded = sent > q->uploaded ? sent : q->uploaded; });
#if QT_VERSION >= QT_VERSION_CHECK(6, 3, 0)
    QObject::connect(r, &QNetworkReply::socketStartedConnecting, r, [q]() {
        if (q->connecting < 0)
            q->connecting = host().now_ns();
    });
    QObject::connect(r, &QNetworkReply::requestSent, r, [q]() {
        if (q->sent < 0)
            q->sent = host().now_ns();
    });
#endif
    /* readChannelFinished comes right before finished: QML's
     * XMLHttpRequest disconnects everything from its reply in its own
     * finished slot, which runs before one connected this late. */
    QObject::connect(r, &QIODevice::readChannelFinished, r, [r, q]() { QTA_GUARD(ended(r, q)); });
    QObject::connect(r, &QNetworkReply::finished, r, [r, q]() { QTA_GUARD(ended(r, q)); });
    if (r->isFinished())
        ended(r, q); /* finished before its class was known */
}

const NetworkPart part = {
    [](QObject *o, int64_t t) { QTA_GUARD(resolve(o, t)); },
};

} // namespace
} // namespace pacer_qt

extern "C" const pacer_qt::NetworkPart *pacer_qt_network_part(void)
{
    return &pacer_qt::part;
}
