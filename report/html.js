(function(){
  // Errors of this page's script end up in the DOM, where the browser test
  // (report/htmlbrowser_test.go) reads them.
  var errs=[];
  function record(m){errs.push(String(m));var p=document.getElementById("page-errors");if(p){p.textContent=errs.join("\n");p.hidden=false;}document.documentElement.setAttribute("data-errors",String(errs.length));}
  window.addEventListener("error",function(e){record(e.message||"error");});
  function num(s){s=s.replace(/[,%\s]|ms|µs/g,"");if(s===""||s==="—")return NaN;var v=Number(s);return v;}
  function sortBy(table,col,th){
    var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);
    var dir=th.getAttribute("aria-sort")==="descending"?"ascending":"descending";
    var numeric=rows.every(function(r){var c=r.cells[col];var v=num(c.textContent);return !isNaN(v)||c.textContent==="—";});
    rows.sort(function(a,b){
      var x=a.cells[col].textContent,y=b.cells[col].textContent,d;
      if(numeric){var p=num(x),q=num(y);if(isNaN(p))p=-Infinity;if(isNaN(q))q=-Infinity;d=p-q;}else{d=x.localeCompare(y);}
      return dir==="ascending"?d:-d;});
    Array.prototype.forEach.call(th.parentNode.cells,function(h){h.setAttribute("aria-sort","none");});
    th.setAttribute("aria-sort",dir);
    rows.forEach(function(r){body.appendChild(r);});
  }
  try{
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"),function(t){
      Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){
        th.addEventListener("click",function(){sortBy(t,i,th);});
        th.addEventListener("keydown",function(e){if(e.key==="Enter"||e.key===" "){e.preventDefault();sortBy(t,i,th);}});
      });
    });
    var charts=document.querySelectorAll("svg.chart").length;
    document.documentElement.setAttribute("data-charts",String(charts));
    document.documentElement.setAttribute("data-rendered","true");
    if(window.performance)document.documentElement.setAttribute("data-render-ms",String(Math.round(performance.now())));
  }catch(e){record(e&&e.message||e);}
})();
